# A Python port of upstream Buzz's tests/bench/ackermann.buzz, line for line.
import sys

from buzz_std import arg


def main(args):
    m = arg(args, 0, 3)
    n = arg(args, 1, 8)

    print(f"result: {ack(m, n)}")


def ack(m, n):
    if m == 0:
        return n + 1

    if n == 0:
        return ack(m - 1, 1)

    return ack(m - 1, ack(m, n - 1))


if __name__ == "__main__":
    # Buzz's call depth is not Python's default 1,000: ack(3, 9) nests
    # about 4,100 calls.
    sys.setrecursionlimit(100_000)
    main(sys.argv[1:])
