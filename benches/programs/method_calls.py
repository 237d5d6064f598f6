# method_calls.buzz in Python: 100,000 method calls on one object.


class Counter:
    def __init__(self, count=0):
        self.count = count

    def bump(self, by):
        self.count = self.count + by
        return self.count


def main(args):
    counter = Counter(count=0)
    i = 0
    while i < 100000:
        counter.bump(1)
        i = i + 1


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
