# %%
import sys
for i in range(2000):
    sys.stdout.write("%04d %s\n" % (i, "y" * 95))

# %%
print("still here")
