def config(cls):
    return cls
