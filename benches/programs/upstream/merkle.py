# A Python port of upstream Buzz's tests/bench/merkle.buzz, line for line.
# `tree.left?.hash ?? 0 + tree.right?.hash ?? 0` adds the two hashes: `??`
# binds tighter than `+` in Buzz. `x ?? 0` of an `int?` is `x or 0` (0 is the
# only false int), and `calHash` has just hashed both children, so neither
# `?.` meets a null.
import math
import sys

from buzz_std import arg, show_bool


class Node:
    def __init__(self, left=None, right=None, value=None, hash=None):
        self.left = left
        self.right = right
        self.value = value
        self.hash = hash


def makeTree(depth):
    if depth > 0:
        return Node(
            makeTree(depth - 1),  # left
            makeTree(depth - 1),  # right
        )

    return Node(None, None, 1)  # value = 1


def check(tree):
    if tree.hash is not None:
        if tree.value is not None:
            return True
        else:
            return check(tree.left) and check(tree.right)

    return False


def calHash(tree):
    if tree.hash is None:
        value = tree.value
        if value is not None:
            tree.hash = value
        else:
            calHash(tree.left)
            calHash(tree.right)

            tree.hash = (tree.left.hash or 0) + (tree.right.hash or 0)


def main(args):
    N = arg(args, 0, 6)

    mindepth = 4
    maxdepth = mindepth + 2
    if maxdepth < N:
        maxdepth = N

    stretchdepth = maxdepth + 1
    stretchtree = makeTree(stretchdepth)
    calHash(stretchtree)

    print(
        f"stretch tree of depth {stretchdepth}\t root hash: {(stretchtree.hash or 0)} check: {show_bool(check(stretchtree))}"
    )

    longlivedtree = makeTree(maxdepth)
    depth = mindepth
    while depth < maxdepth:
        iterations = int(math.pow(2.0, float(maxdepth - depth + mindepth)))
        sum = 0
        for _ in range(0, iterations):
            t = makeTree(depth)
            calHash(t)
            sum = sum + (t.hash or 0)

        print(f"{iterations}\t trees of depth {depth}\t root hash sum: {sum}")
        depth = depth + 2

    calHash(longlivedtree)
    print(
        f"long lived tree of depth {maxdepth}\t root hash: {(longlivedtree.hash or 0)} check: {show_bool(check(longlivedtree))}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
