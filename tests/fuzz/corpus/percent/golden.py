# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # A percent file
# Markdown is not run.

# %% setup
# %config InteractiveShell.ast_node_interactivity = 'last_expr'
x = 6 * 7
print("x is", x)

#%%
x

# %% tags=["raises-exception"]
1 / 0

# %% {"tags": ["skip-execution"]}
raise SystemExit("never run")

# %% progress
import sys
for i in range(3):
    print(f"{i * 50}%", end="\r")
print("done")
print("careful", file=sys.stderr)

# %%
for i in range(2):
    print(i)
{"a": [1, 2]}
