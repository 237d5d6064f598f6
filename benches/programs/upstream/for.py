# A Python port of upstream Buzz's tests/bench/for.buzz, line for line.


def main():
    list = []

    for i in range(0, 1_000_000):
        list.append(i)

    sum = 0
    for v in list:
        sum = sum + v

    print(f"{sum}")


if __name__ == "__main__":
    main()
