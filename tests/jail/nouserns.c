/* Runs a program as on a kernel that refuses user namespaces (Ubuntu
 * 24.04's AppArmor default, kernel.unprivileged_userns_clone=0), without
 * touching any machine-wide setting: a seccomp filter, inherited by
 * everything the program starts, makes unshare and clone with
 * CLONE_NEWUSER fail with EPERM. clone3 hides its flags from seccomp, so it
 * fails with ENOSYS and libc falls back to clone (as under magus's guard).
 * With --all, every namespace flag is refused, as in a container without
 * CAP_SYS_ADMIN under Docker's default profile.
 * Used by tests/jail.rs: nouserns [--all] PROGRAM ARGS... */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define ARCH AUDIT_ARCH_RISCV64
#else
#error "unsupported architecture"
#endif

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define RET(action) BPF_STMT(BPF_RET | BPF_K, (action))

#define ALL_NAMESPACES                                                          \
    (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | \
     CLONE_NEWUTS | CLONE_NEWCGROUP)

int main(int argc, char **argv) {
    int all = argc > 1 && strcmp(argv[1], "--all") == 0;
    unsigned int refused = all ? ALL_NAMESPACES : CLONE_NEWUSER;
    struct sock_filter filter[] = {
        LOAD(arch),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        RET(SECCOMP_RET_ALLOW),
        LOAD(nr),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        RET(SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        /* The flags are the first argument of both; CLONE_NEWUSER lies in
         * its low word, which comes first on these little-endian machines. */
        LOAD(args[0]),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, refused, 0, 1),
        RET(SECCOMP_RET_ERRNO | EPERM),
        RET(SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {
        .len = sizeof(filter) / sizeof(filter[0]),
        .filter = filter,
    };
    argv += 1 + all;
    if (argv[0] == NULL) {
        fprintf(stderr, "usage: nouserns [--all] PROGRAM ARGS...\n");
        return 2;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("nouserns: seccomp");
        return 2;
    }
    execvp(argv[0], argv);
    perror("nouserns: exec");
    return 127;
}
