# A Python port of upstream Buzz's tests/bench/spectral.buzz, line for line.
# Buzz's `for (i: double = 0.0; i < N; i = i + 1.0)` is a `while` here.
import math
import sys

from buzz_std import arg, show_double


def A(i, j):
    ij = i + j
    return 1.0 / (ij * (ij + 1.0) * 0.5 + i + 1.0)


def Av(x, y, N):
    i = 0.0
    while i < N:
        a = 0.0
        j = 0.0
        while j < N:
            a = a + x[int(j)] * A(i, j)
            j = j + 1.0
        y[int(i)] = a
        i = i + 1.0


def Atv(x, y, N):
    i = 0.0
    while i < N:
        a = 0.0
        j = 0.0
        while j < N:
            a = a + x[int(j)] * A(j, i)  # i: j, j: i
            j = j + 1.0
        y[int(i)] = a
        i = i + 1.0


def AtAv(x, y, t, N):
    Av(x, t, N)  # y: t
    Atv(t, y, N)  # x: t


def main(args):
    N = arg(args, 0, 100)

    u = []
    v = []
    t = []
    for _ in range(0, N):
        u.append(1.0)
        v.append(0.0)
        t.append(0.0)

    for _ in range(0, 10):
        AtAv(u, v, t, N)
        AtAv(v, u, t, N)  # x: v, y: u

    vBv = 0.0
    vv = 0.0
    for i in range(0, N):
        ui = u[i]
        vi = v[i]
        vBv = vBv + ui * vi
        vv = vv + vi * vi

    print(f"{show_double(math.sqrt(vBv / vv))}")


if __name__ == "__main__":
    main(sys.argv[1:])
