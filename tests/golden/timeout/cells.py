# %%
print("before")

# %%
import time
time.sleep(60)

# %%
print("after")
