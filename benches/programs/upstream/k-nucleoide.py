# A Python port of upstream Buzz's tests/bench/k-nucleoide.buzz, line for
# line. It reads a FASTA file on stdin (upstream's input is fasta's output).
# Buzz's `/` on ints truncates toward zero; its operands here are positive,
# where `//` is the same. A Buzz `{str: int}` keeps insertion order, as a
# `dict` does.
import sys

from buzz_std import std_print


def readLine():
    """`io\\stdin.readLine()`: the next line without its newline, or None at
    the end."""
    line = sys.stdin.readline()
    if line == "":
        return None
    return line[:-1] if line.endswith("\n") else line


def readSequence():
    skippedIgnoredSequences = False
    lines = []
    line = ""
    while line is not None:
        if not skippedIgnoredSequences:
            if line.startswith(">THREE"):
                skippedIgnoredSequences = True
        else:
            c = line[0]
            if c == ">":
                break
            elif c != ";":
                lines.append(line)
        line = readLine()

    return "".join(lines).upper()


def kfrequency(sequence, frequency, k, frame):
    i = frame
    while i < len(sequence):
        c = sequence[i : i + k]
        frequency[c] = frequency.get(c, 0) + 1
        i = i + k


def count(sequence, fragment):
    k = len(fragment)
    frequency = {}
    frame = 0
    while frame < k:
        kfrequency(sequence, frequency, k, frame)
        frame = frame + 1
    print(f"{frequency.get(fragment, 0)}\t{fragment}")


def frequency(sequence, k):
    frequency = {}
    frame = 0
    while frame < k:
        kfrequency(sequence, frequency, k, frame)
        frame = frame + 1

    sum = len(sequence) - k + 1
    for c, f in frequency.items():
        print(f"{c} {(f * 100) // sum}")
    std_print("")


def main():
    try:
        sequence = readSequence()
    except OSError:
        sequence = ""
    frequency(sequence, k=1)
    frequency(sequence, k=2)
    count(sequence, fragment="GGT")
    count(sequence, fragment="GGTA")
    count(sequence, fragment="GGTATT")
    count(sequence, fragment="GGTATTTTAATT")
    count(sequence, fragment="GGTATTTTAATTTATAGT")


if __name__ == "__main__":
    main()
