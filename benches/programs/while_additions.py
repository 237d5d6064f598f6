# while_additions.buzz in Python: 1,000,000 integer additions in a `while`
# loop, in a function so that its variables are locals, as in Buzz.


def main(args):
    i = 0
    sum = 0
    while i < 1000000:
        sum = sum + i
        i = i + 1


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
