# %%
print("café")
