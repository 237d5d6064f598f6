# What the Python ports beside this file need of Buzz's `std` and of its
# string interpolation, so each port stays a line-for-line translation.


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
