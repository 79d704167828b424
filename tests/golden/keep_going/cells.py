# %%
print("one")

# %%
raise ValueError("two failed")

# %%
print("three")
