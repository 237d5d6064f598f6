# A Python port of upstream Buzz's tests/bench/bubble-sort.buzz, line for
# line. Buzz's `/` on ints truncates toward zero; every operand here is
# positive at the sizes run (max > 117), where `//` is the same.
import sys

from buzz_std import arg


def main(args):
    max = arg(args, 0, 750)

    list = init(max)

    bubblesort(list)

    for e in list:
        print(f"{e}")


def init(max):
    list = []
    f = max - 13
    h = ((max - 117) * (max - 13)) // max

    for i in range(0, max):
        list.append((f * i) % h - (h // 2))

    return list


def bubblesort(list):
    len_ = len(list)
    for _ in range(0, len_ - 1):
        for j in range(0, len_ - 1):
            if list[j] > list[j + 1]:
                tmp = list[j]
                list[j] = list[j + 1]
                list[j + 1] = tmp


if __name__ == "__main__":
    main(sys.argv[1:])
