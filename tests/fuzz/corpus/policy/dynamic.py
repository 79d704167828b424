x = __import__("sub" + "process")
exec(compile("1", "f", "exec"))
