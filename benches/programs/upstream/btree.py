# A Python port of upstream Buzz's tests/bench/btree.buzz, line for line.
import math
import sys

from buzz_std import arg


class Node:
    def __init__(self, left=None, right=None):
        self.left = left
        self.right = right


def bottom_up_tree(depth):
    if depth > 0:
        return Node(
            bottom_up_tree(depth - 1),  # left
            bottom_up_tree(depth - 1),  # right
        )

    return Node()


def item_check(tree):
    left = tree.left
    if left is not None:
        return 1 + item_check(left) + item_check(tree.right)
    else:
        return 1

    return 0


def btree(N):
    mindepth = 4
    maxdepth = mindepth + 2
    if maxdepth < N:
        maxdepth = N

    stretchdepth = maxdepth + 1
    stretchtree = bottom_up_tree(stretchdepth)
    print(f"stretch tree of depth {stretchdepth},\t check: {item_check(stretchtree)}")

    longlivedtree = bottom_up_tree(maxdepth)
    depth = mindepth
    while depth < maxdepth:
        iterations = int(math.pow(2.0, float(maxdepth - depth + mindepth)))
        check = 0
        for _ in range(0, iterations):
            check = check + item_check(bottom_up_tree(depth))

        print(f"{iterations}\t trees of depth {depth}\t check: {check}")
        depth = depth + 2

    print(f"long lived tree of depth {maxdepth}\t check: {item_check(longlivedtree)}")


def main(args):
    btree(arg(args, 0, 3))


if __name__ == "__main__":
    main(sys.argv[1:])
