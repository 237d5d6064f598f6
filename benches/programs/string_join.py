# string_join.buzz in Python: 100,000 string pieces appended to a list,
# then joined.


def main(args):
    pieces = []
    i = 0
    while i < 100000:
        pieces.append("piece")
        i = i + 1
    text = ",".join(pieces)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
