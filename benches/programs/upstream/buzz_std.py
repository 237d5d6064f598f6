# What the Python ports beside this file need of Buzz's `std` and of its
# string interpolation, so each port stays a line-for-line translation.
#
# The ports' rules: the same algorithm and the same data structures (a Buzz
# object is a class, a list a list, a map a dict, a `Buffer` a bytearray);
# `foreach (i in a..b)` is `for i in range(a, b)`, a C-style `for` is a
# `while`; functions keep their names and their locals stay locals; the
# same output, byte for byte. A call that runs more than a few times passes
# its arguments by position, with Buzz's names in a comment where the order
# is not obvious: Buzz binds argument names when it compiles, CPython
# matches keywords at every call (about 10% of spectral's time), and the
# comparison is of the interpreters, not of that spelling.


def arg(args, index, default):
    """`std\\parseInt(args[?index] ?? "default") ?? default`."""
    text = args[index] if index < len(args) else str(default)
    try:
        return int(text)
    except ValueError:
        return default


def show_double(d):
    """A double as Buzz's `"{d}"` shows it: the shortest digits that read
    back as the same double, never in exponent notation, and no `.0` on a
    whole number (Zig's `{d}`, Rust's `Display`)."""
    if d != d:
        return "NaN"
    if d in (float("inf"), float("-inf")):
        return "inf" if d > 0 else "-inf"
    text = repr(d)
    if "e" in text:
        from decimal import Decimal

        text = format(Decimal(text), "f")
    if text.endswith(".0"):
        text = text[:-2]
    return text


def show_bool(b):
    """A bool as Buzz shows it."""
    return "true" if b else "false"


def std_print(text):
    """`std\\print(text)`: the text and a newline, except that an empty text
    prints nothing at all (upstream's native returns before writing)."""
    if text:
        print(text)
