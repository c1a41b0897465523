import os

os._exit(9)
