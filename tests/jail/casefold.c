/* A case-insensitive, case-preserving file system over a backing
 * directory, as macOS's default APFS compares names: `casefold BACKING
 * MOUNTPOINT` mounts it (FUSE, in the foreground, until unmounted).
 * A name matches an entry whose name differs only in ASCII case, or by
 * the Kelvin sign (U+212A) for `k` and the long s (U+017F) for `s`, which
 * Unicode case folding equates too; a new entry keeps the spelling it was
 * created with. Each request runs with the caller's file-system uid and
 * gid, so ownership and permissions are the backing directory's own.
 * The test builds it with `cc ... -lfuse3` (Debian's libfuse3-dev). */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static char backing[PATH_MAX];

/* The comparison key of a name: ASCII letters in lower case, the Kelvin
 * sign as `k`, the long s as `s`; every other byte as it is. */
static void key(const char *name, char *out, size_t size) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && n + 1 < size; p++) {
        if (p[0] == 0xE2 && p[1] == 0x84 && p[2] == 0xAA) {
            out[n++] = 'k';
            p += 2;
        } else if (p[0] == 0xC5 && p[1] == 0xBF) {
            out[n++] = 's';
            p += 1;
        } else if (*p >= 'A' && *p <= 'Z') {
            out[n++] = (char)(*p - 'A' + 'a');
        } else {
            out[n++] = (char)*p;
        }
    }
    out[n] = 0;
}

/* Appends to `dir` the entry of it whose key is the key of `name`, or
 * `name` itself when there is none (a name about to be created). */
static void append_match(char *dir, const char *name) {
    size_t len = strlen(dir);
    char want[NAME_MAX * 3 + 1], have[NAME_MAX * 3 + 1];
    const char *found = name;
    key(name, want, sizeof want);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        key(e->d_name, have, sizeof have);
        if (strcmp(have, want) == 0) {
            found = e->d_name;
            if (strcmp(e->d_name, name) == 0)
                break;
        }
    }
    snprintf(dir + len, PATH_MAX - len, "/%s", found);
    if (d)
        closedir(d);
}

/* The backing path of `path` (as FUSE hands it: absolute, no `.`/`..`),
 * each name matched as the file system compares names; and the caller's
 * ids taken on for the request. */
static void resolve(const char *path, char *out) {
    struct fuse_context *c = fuse_get_context();
    setfsuid(c->uid);
    setfsgid(c->gid);
    snprintf(out, PATH_MAX, "%s", backing);
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    char *save = NULL;
    for (char *name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save))
        append_match(out, name);
}

#define RESOLVED(var, path) \
    char var[PATH_MAX];     \
    resolve(path, var)

static int err(int rc) { return rc < 0 ? -errno : rc; }

static void *cf_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    (void)conn;
    cfg->use_ino = 1;
    cfg->hard_remove = 1;
    /* Every lookup asks again: two spellings are two kernel inodes. */
    cfg->entry_timeout = 0;
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    return NULL;
}

static int cf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    if (fi)
        return err(fstat((int)fi->fh, st));
    RESOLVED(p, path);
    return err(lstat(p, st));
}

static int cf_readlink(const char *path, char *buf, size_t size) {
    RESOLVED(p, path);
    ssize_t n = readlink(p, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = 0;
    return 0;
}

static int cf_mknod(const char *path, mode_t mode, dev_t rdev) {
    RESOLVED(p, path);
    return err(mknod(p, mode, rdev));
}

static int cf_mkdir(const char *path, mode_t mode) {
    RESOLVED(p, path);
    return err(mkdir(p, mode));
}

static int cf_unlink(const char *path) {
    RESOLVED(p, path);
    return err(unlink(p));
}

static int cf_rmdir(const char *path) {
    RESOLVED(p, path);
    return err(rmdir(p));
}

static int cf_symlink(const char *target, const char *path) {
    RESOLVED(p, path);
    return err(symlink(target, p));
}

static int cf_rename(const char *from, const char *to, unsigned int flags) {
    RESOLVED(f, from);
    RESOLVED(t, to);
    return err(renameat2(AT_FDCWD, f, AT_FDCWD, t, flags));
}

static int cf_link(const char *from, const char *to) {
    RESOLVED(f, from);
    RESOLVED(t, to);
    return err(link(f, t));
}

static int cf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    if (fi)
        return err(fchmod((int)fi->fh, mode));
    RESOLVED(p, path);
    return err(chmod(p, mode));
}

static int cf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    if (fi)
        return err(fchown((int)fi->fh, uid, gid));
    RESOLVED(p, path);
    return err(lchown(p, uid, gid));
}

static int cf_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    if (fi)
        return err(ftruncate((int)fi->fh, size));
    RESOLVED(p, path);
    return err(truncate(p, size));
}

static int cf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    if (fi)
        return err(futimens((int)fi->fh, tv));
    RESOLVED(p, path);
    return err(utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW));
}

static int cf_open(const char *path, struct fuse_file_info *fi) {
    RESOLVED(p, path);
    int fd = open(p, fi->flags);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int cf_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    RESOLVED(p, path);
    int fd = open(p, fi->flags, mode);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int cf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    return err((int)pread((int)fi->fh, buf, size, off));
}

static int cf_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
    (void)path;
    return err((int)pwrite((int)fi->fh, buf, size, off));
}

static int cf_statfs(const char *path, struct statvfs *st) {
    RESOLVED(p, path);
    return err(statvfs(p, st));
}

static int cf_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int cf_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path;
    return err(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}

static int cf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    (void)off, (void)fi, (void)flags;
    RESOLVED(p, path);
    DIR *d = opendir(p);
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
        if (fill(buf, e->d_name, &st, 0, 0))
            break;
    }
    closedir(d);
    return 0;
}

static const struct fuse_operations ops = {
    .init = cf_init,
    .getattr = cf_getattr,
    .readlink = cf_readlink,
    .mknod = cf_mknod,
    .mkdir = cf_mkdir,
    .unlink = cf_unlink,
    .rmdir = cf_rmdir,
    .symlink = cf_symlink,
    .rename = cf_rename,
    .link = cf_link,
    .chmod = cf_chmod,
    .chown = cf_chown,
    .truncate = cf_truncate,
    .utimens = cf_utimens,
    .open = cf_open,
    .create = cf_create,
    .read = cf_read,
    .write = cf_write,
    .statfs = cf_statfs,
    .release = cf_release,
    .fsync = cf_fsync,
    .readdir = cf_readdir,
};

int main(int argc, char *argv[]) {
    if (argc != 3 || !realpath(argv[1], backing)) {
        fprintf(stderr, "usage: casefold BACKING MOUNTPOINT\n");
        return 2;
    }
    char *args[] = {
        argv[0], argv[2], "-f", "-s", "-o",
        "allow_other,default_permissions,fsname=casefold,subtype=casefold", NULL,
    };
    umask(0);
    return fuse_main(6, args, &ops, NULL);
}
