# Makes another process run system calls for us with ptrace (x86_64): the
# attack on magus's own processes where Landlock's ptrace scoping is
# missing (tests/jail.rs, magus_processes_cannot_be_made_to_act_for_a_child).
# Prints INJECT-SETUID-OK or INJECT-CONNECT-OK only when the target did it.
#
#   inject.py parent|grandparent setuid PATH       openat2 mode 04755
#   inject.py parent|grandparent connect PORT MSG  socket, connect, write
import ctypes
import os
import socket
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
ATTACH, DETACH, GETREGS, SETREGS, PEEK, POKE, STEP = 16, 17, 12, 13, 1, 5, 9
WALL = 0x40000000
NAMES = "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs"


class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in NAMES.split()]


def pt(req, pid, addr=0, data=0):
    ctypes.set_errno(0)
    r = libc.ptrace(req, pid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
    if r == -1 and ctypes.get_errno():
        raise OSError(ctypes.get_errno(), "ptrace %d" % req)
    return r


def stopped_in_syscall(pid):
    """Attaches until the target stops right after a `syscall` instruction
    (blocked in wait4 or read, as magus's processes mostly are)."""
    for _ in range(100):
        pt(ATTACH, pid)
        os.waitpid(pid, WALL)
        regs = Regs()
        pt(GETREGS, pid, 0, ctypes.addressof(regs))
        if pt(PEEK, pid, regs.rip - 2) & 0xFFFF == 0x050F:
            return regs
        pt(DETACH, pid)
        time.sleep(0.01)
    raise OSError(0, "never stopped in a system call")


def inject(pid, data, calls):
    """Writes `data` below the target's stack, then runs each (nr, args)
    there; an argument may be a function of the results so far, `base` is
    where `data` went. Returns the results."""
    saved = stopped_in_syscall(pid)
    base = (saved.rsp - 65536) & ~15
    data += b"\0" * (-len(data) % 8)
    for i in range(0, len(data), 8):
        pt(POKE, pid, base + i, struct.unpack("<Q", data[i : i + 8])[0])
    out = []
    for nr, args in calls:
        regs = Regs()
        ctypes.memmove(ctypes.addressof(regs), ctypes.addressof(saved), ctypes.sizeof(regs))
        regs.rip, regs.rax, regs.orig_rax = saved.rip - 2, nr, 2**64 - 1
        for name, value in zip(["rdi", "rsi", "rdx", "r10", "r8", "r9"], args):
            value = value(out, base) if callable(value) else value
            setattr(regs, name, value & (2**64 - 1))
        pt(SETREGS, pid, 0, ctypes.addressof(regs))
        pt(STEP, pid)
        os.waitpid(pid, WALL)
        pt(GETREGS, pid, 0, ctypes.addressof(regs))
        out.append(ctypes.c_longlong(regs.rax).value)
    pt(SETREGS, pid, 0, ctypes.addressof(saved))
    pt(DETACH, pid)
    return out


def first(out, base):
    return out[0]


def setuid_from(pid, path):
    how = struct.pack("<QQQ", os.O_CREAT | os.O_WRONLY, 0o4755, 0)
    calls = [(437, [-100, lambda o, b: b + 24, lambda o, b: b, 24]), (3, [first])]
    print("RESULTS", inject(pid, how + path.encode() + b"\0", calls))
    if os.stat(path).st_mode & 0o4000:
        print("INJECT-SETUID-OK")


def connect_from(pid, port, message):
    addr = struct.pack("<HH4s8x", socket.AF_INET, socket.htons(port), socket.inet_aton("127.0.0.1"))
    calls = [
        (41, [socket.AF_INET, socket.SOCK_STREAM, 0]),
        (42, [first, lambda o, b: b, 16]),
        (1, [first, lambda o, b: b + 16, len(message)]),
        (3, [first]),
    ]
    out = inject(pid, addr + message, calls)
    print("RESULTS", out)
    if out[0] >= 0 and out[1] == 0 and out[2] == len(message):
        print("INJECT-CONNECT-OK")


def parent_of(pid):
    stat = open("/proc/%d/stat" % pid).read()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


if __name__ == "__main__":
    which, what = sys.argv[1], sys.argv[2]
    target = os.getppid() if which == "parent" else parent_of(os.getppid())
    print("TARGET", target)
    try:
        if what == "setuid":
            setuid_from(target, sys.argv[3])
        else:
            connect_from(target, int(sys.argv[3]), sys.argv[4].encode())
    except OSError as e:
        print("INJECT-REFUSED", e)
    print("INJECT-DONE")
