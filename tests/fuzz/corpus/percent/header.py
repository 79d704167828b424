# ---
# jupyter:
#   kernelspec:
#     name: python3
# ---
# %% T [markdown] k="v"
# text
# %% tags=["a", "b"] {"x": 1}
# %time
x = 1
#%%
!ls
