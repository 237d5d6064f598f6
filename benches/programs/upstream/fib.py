# A Python port of upstream Buzz's tests/bench/fib.buzz, line for line.


def fibonnacci(n):
    if n < 2:
        return n

    return fibonnacci(n - 2) + fibonnacci(n - 1)


def main():
    print(f"{fibonnacci(30)}")


if __name__ == "__main__":
    main()
