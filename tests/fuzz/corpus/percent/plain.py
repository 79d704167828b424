no marker at all
print(1)
