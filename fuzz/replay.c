/*
 * fuzz/replay.c - a main() for a fuzz target without libFuzzer: runs the target once on each
 * file named, or on each file of each directory named (in name order), as libFuzzer would.
 *
 * The normal build (any compiler, no clang) links every target with this file as
 * fuzz_replay_TARGET, and ctest runs it over the target's seed corpus (fuzz/corpus/TARGET):
 * the seeds, reproducers of past findings among them, stay a regression test under
 * ./test.sh and under CI's ASan + UBSan build, and the targets keep compiling with gcc's
 * warnings as errors.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    /* An exact-size copy, so that the sanitizers see a read past the input. */
    uint8_t *data = malloc(n ? n : 1);
    if (!data) {
        free(buf);
        return 1;
    }
    memcpy(data, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    int failed = 0, inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            failed |= run_file(argv[i]);
            inputs++;
            continue;
        }
        struct dirent **list;
        int n = scandir(argv[i], &list, NULL, by_name);
        if (n < 0) {
            perror(argv[i]);
            return 1;
        }
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
            if (list[k]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
                failed |= run_file(path);
                inputs++;
            }
            free(list[k]);
        }
        free(list);
    }
    printf("%s: %d inputs replayed\n", argv[0], inputs);
    return failed || inputs == 0;
}
