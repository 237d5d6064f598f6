# A Python port of upstream Buzz's tests/bench/grid.buzz, line for line.
# Upstream's `std\random(max: 5)` is a uniform integer in [0, 5], both ends
# included (Zig's `intRangeAtMost`), like `random.randint(0, 5)`. It prints
# nothing.
import random
import sys

from buzz_std import arg


def main(args):
    width = arg(args, 0, 80)
    height = arg(args, 1, 60)

    cells = []

    for _ in range(0, width * height):
        cells.append(random.randint(0, 5) == 1)

    for y in range(0, height):
        for x in range(0, width):
            cells[y * width + x] = not cells[y * width + x]


if __name__ == "__main__":
    main(sys.argv[1:])
