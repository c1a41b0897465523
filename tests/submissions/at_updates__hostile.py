"""Each function takes the process down in its own way."""

import os

import numpy as np


def scatter_ops(x, idx, vals):
    os._exit(7)


def histogram(x, nbins):
    while True:
        pass


def mask_fill(x, threshold, fill):
    hog = []
    while True:
        hog.append(np.ones(1 << 24))  # 128 MiB at a time, touched


def lookup_and_clamp(x, idx, vals, fill):
    while True:
        print("spam " * 200)
