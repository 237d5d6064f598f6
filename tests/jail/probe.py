# Attacks on the jail, run by a child of magus (tests/jail.rs). Each
# prints `<NAME>-OK` only when the attack worked; secrets are printed so
# the test can see whether they leaked.
import ctypes
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
# keyctl's number differs by architecture (glibc has no wrapper for it).
KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219}[os.uname().machine]


def sock(path):
    s = socket.socket(socket.AF_UNIX)
    # `@name` is the abstract name `\0name` (argv cannot carry a NUL).
    s.connect("\0" + path[1:] if path.startswith("@") else path)
    print("SOCK-OK", s.recv(200).decode())


def keyring(desc):
    libc.syscall.restype = ctypes.c_long
    KEYCTL_SEARCH, KEYCTL_READ, SESSION = 10, 11, -3
    key = libc.syscall(KEYCTL, KEYCTL_SEARCH, SESSION, b"user", desc.encode(), 0)
    if key < 0:
        raise OSError(ctypes.get_errno(), "keyctl search")
    buf = ctypes.create_string_buffer(200)
    n = libc.syscall(KEYCTL, KEYCTL_READ, key, buf, 200)
    if n < 0:
        raise OSError(ctypes.get_errno(), "keyctl read")
    print("KEY-OK", buf.raw[:n].decode())


def sysv(key):
    libc.shmat.restype = ctypes.c_void_p
    shm = libc.shmget(int(key, 0), 0, 0)
    if shm < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    addr = libc.shmat(shm, None, 0o10000)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "shmat")
    print("SHM-OK", ctypes.string_at(addr, 64).split(b"\0")[0].decode())


def mqueue(name):
    """Reads a POSIX message queue of the session (without waiting), and
    puts the message back."""
    q = libc.mq_open(name.encode(), os.O_RDWR | os.O_NONBLOCK)
    if q < 0:
        raise OSError(ctypes.get_errno(), "mq_open")
    buf = ctypes.create_string_buffer(256)
    n = libc.mq_receive(q, buf, 256, None)
    if n < 0:
        raise OSError(ctypes.get_errno(), "mq_receive")
    libc.mq_send(q, buf, n, 0)
    print("MQUEUE-OK", buf.raw[:n].decode())


class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]


def handle_name(path):
    h = Handle(128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(h), ctypes.byref(mount_id), 0) != 0:
        raise OSError(ctypes.get_errno(), "name_to_handle_at")
    print("%d:%d:%s" % (h.bytes, h.type, bytes(h.f[: h.bytes]).hex()))


def handle_open(mount_dir, text):
    size, kind, raw = text.split(":")
    h = Handle(int(size), int(kind))
    for i, b in enumerate(bytes.fromhex(raw)):
        h.f[i] = b
    mfd = os.open(mount_dir, os.O_RDONLY)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(h), os.O_RDONLY)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "open_by_handle_at")
    print("HANDLE-OK", os.read(fd, 200).decode())


def fanotify(path):
    fd = libc.fanotify_init(0, os.O_RDONLY)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "fanotify_init")
    FAN_MARK_ADD, FAN_MARK_FILESYSTEM, FAN_OPEN = 1, 0x100, 0x20
    if libc.fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, ctypes.c_uint64(FAN_OPEN), -100, path.encode()) != 0:
        raise OSError(ctypes.get_errno(), "fanotify_mark")
    print("FANOTIFY-OK")


def parent(secret):
    """Reads the parent (magus) by every route that reaches its memory."""
    ppid = os.getppid()
    libc.syscall.restype = ctypes.c_long
    tried = {}
    try:
        maps = open("/proc/%d/maps" % ppid).read().splitlines()
        mem = open("/proc/%d/mem" % ppid, "rb")
        span = maps[0].split()[0]
        mem.seek(int(span.split("-")[0], 16))
        mem.read(16)
        print("MEM-OK")
    except OSError as e:
        tried["mem"] = e
    try:
        buf = ctypes.create_string_buffer(16)

        class IoVec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

        local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 16)
        remote = IoVec(ctypes.c_void_p(0x400000), 16)
        n = libc.process_vm_readv(ppid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if n >= 0 or ctypes.get_errno() not in (1, 13):
            print("VMREAD-OK")
        else:
            tried["vmread"] = ctypes.get_errno()
    except OSError as e:
        tried["vmread"] = e
    pidfd = libc.syscall(434, ppid, 0)
    if pidfd >= 0:
        got = [libc.syscall(438, pidfd, fd, 0) for fd in range(3)]
        if any(g >= 0 for g in got):
            print("GETFD-OK")
    if libc.ptrace(0x4206, ppid, None, None) == 0:
        print("PTRACE-OK")
    print("PARENT-DONE", tried)


def listdir_fd(fd, rel):
    fd = int(fd)
    print("LISTED", os.listdir(fd))
    up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    print("UP", os.listdir(up))
    with open(os.path.join("/proc/self/fd/%d" % fd, rel)) as f:
        print("FD-OK", f.read())


def clone3():
    """clone3 with no arguments: EINVAL where the kernel reads them."""
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(435, None, 0)
    err = ctypes.get_errno()
    print("CLONE3-ENOSYS" if r < 0 and err == 38 else "CLONE3-REACHED", r, err)


def report_set_id(name, err):
    """Prints `SETID-OK name` when `name` exists with a set-id bit."""
    if err:
        print("SETID-REFUSED", name, err)
    elif os.stat(name).st_mode & 0o6000:
        print("SETID-OK", name, oct(os.stat(name).st_mode))
    else:
        print("SETID-STRIPPED", name)


def tmpfile_setid(name, mode):
    """An unnamed O_TMPFILE file made with a set-id mode, then linked in."""
    O_TMPFILE = 0o20200000
    fd = libc.open(b".", O_TMPFILE | os.O_WRONLY, int(mode, 8))
    if fd < 0:
        return report_set_id(name, "open errno %d" % ctypes.get_errno())
    err = libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100, name.encode(), 0x400)
    report_set_id(name, "linkat errno %d" % ctypes.get_errno() if err else "")


def uring_setid(name, mode):
    """IORING_OP_OPENAT with O_CREAT and a set-id mode: the mode travels in
    shared memory, where seccomp cannot read it. Raw syscalls (425, 426
    on every architecture), one SQE, waited for with GETEVENTS."""
    import mmap
    import struct
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)
    ring = libc.syscall(425, 4, params)
    if ring < 0:
        return report_set_id(name, "io_uring_setup errno %d" % ctypes.get_errno())
    entries, cq_entries = struct.unpack_from("2I", params, 0)
    sq_off = struct.unpack_from("7I", params, 40)  # head tail mask entries flags dropped array
    cq_off = struct.unpack_from("6I", params, 80)  # head tail mask entries overflow cqes
    length = max(sq_off[6] + entries * 4, cq_off[5] + cq_entries * 16)
    rings = mmap.mmap(ring, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    sqes = mmap.mmap(ring, entries * 64, mmap.MAP_SHARED,
                     mmap.PROT_READ | mmap.PROT_WRITE, offset=0x10000000)
    path = ctypes.create_string_buffer(name.encode())
    sqe = bytearray(64)
    struct.pack_into("BBHi", sqe, 0, 18, 0, 0, -100)  # IORING_OP_OPENAT, AT_FDCWD
    struct.pack_into("QQII", sqe, 8, 0, ctypes.addressof(path), int(mode, 8),
                     os.O_CREAT | os.O_WRONLY)
    sqes[0:64] = bytes(sqe)
    tail = struct.unpack_from("I", rings, sq_off[1])[0]
    mask = struct.unpack_from("I", rings, sq_off[2])[0]
    struct.pack_into("I", rings, sq_off[6] + (tail & mask) * 4, 0)
    struct.pack_into("I", rings, sq_off[1], tail + 1)
    if libc.syscall(426, ring, 1, 1, 1, None, 0) < 0:
        return report_set_id(name, "io_uring_enter errno %d" % ctypes.get_errno())
    res = struct.unpack_from("i", rings, cq_off[5] + 8)[0]
    report_set_id(name, "openat result %d" % res if res < 0 else "")


COMMANDS = {
    "tmpfile-setid": tmpfile_setid,
    "uring-setid": uring_setid,
    "sock": sock,
    "keyring": keyring,
    "sysv": sysv,
    "mqueue": mqueue,
    "handle-name": handle_name,
    "handle-open": handle_open,
    "fanotify": fanotify,
    "parent": parent,
    "listdir-fd": listdir_fd,
    "clone3": clone3,
}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
