/*
 * tools/cmd_plan.c - fusec dump, graph and explain: what a program compiles to (the CUDA of
 * each kernel), how it was grouped (text or Graphviz), and why (fusion boundaries and cache
 * misses).
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name(const fcp_kernel *k) { return fcp_kernel_kind_names[k->kind]; }

/* "row over [64, 256] reducing axis 1" into buf. */
static const char *kernel_summary(const fcp_kernel *k, char *buf, size_t size) {
    char sh[200];
    int n = snprintf(buf, size, "%s over %s", kind_name(k), fcg_shape_str(sh, k->ndim, k->space));
    if (k->rmask && n > 0 && (size_t)n < size) {
        int count = 0;
        for (int d = 0; d < k->ndim; d++) count += (k->rmask >> d) & 1;
        n += snprintf(buf + n, size - (size_t)n, " reducing ax%s", count > 1 ? "es" : "is");
        for (int d = 0; d < k->ndim && n > 0 && (size_t)n < size; d++)
            if (k->rmask & (1u << d)) n += snprintf(buf + n, size - (size_t)n, " %d", d);
    }
    return buf;
}

static int write_error(void) {
    cli_error("cannot write the output: %s", strerror(errno));
    return EXIT_IO;
}

/* ---- dump --------------------------------------------------------------------------------- */

static const char usage_dump[] =
    "usage: fusec dump FILE.fc... [--set NAME=VALUE ...] [--arch sm_XX] [--no-prelude]\n"
    "                  [--fast-math]\n"
    "\n"
    "Prints the CUDA C source of every kernel the program compiles to, in execution order.\n"
    "Each kernel is preceded by one comment line:\n"
    "\n"
    "    // ==== kernel I of N: KIND, key KEY (ARCH)[, fast math]\n"
    "\n"
    "KIND is elementwise, reduce, row or library (a library call has no generated source);\n"
    "KEY is the kernel's cache key (32 hex digits) for ARCH. The source is the same for every\n"
    "architecture: --arch only picks the key. A trace file (docs/TRACE.md) holds several\n"
    "programs; each then starts with a line '// ==== program FILE:LINE'.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n"
    "  --arch sm_XX       the architecture of the keys (default " CLI_DEFAULT_ARCH ")\n"
    "  --no-prelude       leave out the device prelude every kernel starts with (about a\n"
    "                     thousand lines, the same in each; the key still covers it)\n"
    "  --fast-math        the fast-math tier (as FUSEC_FAST_MATH=1): FMA contraction,\n"
    "                     approximate f32 math, abs(z) <= r on complex as |z|^2 <= r^2; its\n"
    "                     kernels and keys differ from the exact default's\n";

/* Writes a kernel's source, optionally with its prelude (and the fast-math tier's text in
 * front of it) replaced by a one-line note. */
static void print_source(const char *text, bool no_prelude) {
    const char *pre = no_prelude ? strstr(text, fcx_prelude_source) : NULL;
    const char *fast = no_prelude ? strstr(text, fcx_fast_math_source) : NULL;
    size_t len = strlen(text);
    if (pre) {
        int lines = 0;
        for (const char *c = fcx_prelude_source; *c; c++) lines += *c == '\n';
        fwrite(text, 1, (size_t)((fast && fast < pre ? fast : pre) - text), stdout);
        if (fast && fast < pre)
            printf("// [the fast-math tier's functions, codegen/fast_math.cuh, left out by "
                   "--no-prelude]\n");
        printf("// [the device prelude, codegen/prelude.cuh: %d lines, left out by --no-prelude]\n",
               lines);
        fputs(pre + strlen(fcx_prelude_source), stdout);
    } else {
        fputs(text, stdout);
    }
    if (len && text[len - 1] != '\n') putchar('\n');
}

typedef struct dump_state {
    const cli_opts *o;
    bool headers;
} dump_state;

static int dump_one(fc_ctx *ctx, const cli_program *p, void *user) {
    dump_state *ds = user;
    const char *arch = ds->o->archs[0];
    fck_options co = fck_options_default();
    co.stage = FCK_KEY; /* the source does not depend on the arch; the key does */
    co.archs = &arch;
    co.narch = 1;
    fck_result *r;
    int rc = cli_compile(ctx, p, &co, &r);
    if (rc) {
        fck_result_free(r);
        return rc;
    }
    const fcp_plan *plan = r->plan;
    if (ds->headers || p->count > 1) printf("// ==== program %s\n", p->label);
    /* The kernels before one that failed are shown, then the failure. */
    for (int i = 0; i < r->nkernel; i++) {
        const fck_kernel *fk = &r->kernels[i];
        const fcp_kernel *k = fk->k;
        if (fk->lib) {
            printf("// ==== kernel %d of %d: %s (%s), no generated source\n", i, plan->nkernel,
                   kind_name(k), fcg_node_name(k->outs[0]));
            continue;
        }
        char hex[33];
        fcc_key_to_hex(&fk->targets[0].key, hex);
        printf("// ==== kernel %d of %d: %s, key %s (%s)%s\n", i, plan->nkernel, kind_name(k),
               hex, arch, fk->src.fast_math ? ", fast math" : "");
        print_source(fk->src.src, ds->o->no_prelude);
    }
    if (r->error != FC_OK) rc = cli_compile_failed(ctx, p, r);
    fck_result_free(r);
    if (!rc && (ferror(stdout) || fflush(stdout) != 0)) rc = write_error();
    return rc;
}

int cmd_dump(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("dump", argc, argv,
                       OPT_SET | OPT_ARCH | OPT_NO_PRELUDE | OPT_FILES | OPT_FAST_MATH, &o);
    if (rc || o.help) {
        rc = cli_usage(usage_dump, &o, rc);
        cli_opts_free(&o);
        return rc;
    }
    fc_ctx *ctx;
    if (!(rc = cli_open_ctx(FC_BACKEND_HOST, NULL, o.fast_math, &ctx))) {
        dump_state ds = {&o, o.nfiles > 1};
        for (int i = 0; i < o.nfiles; i++) {
            int r = cli_for_each_program(ctx, &o, o.files[i], false, false, dump_one, &ds);
            if (r && !rc) rc = r;
        }
        if (!rc) rc = cli_check_sets_used(&o);
        fc_ctx_destroy(ctx);
    }
    cli_opts_free(&o);
    return rc;
}

/* ---- graph -------------------------------------------------------------------------------- */

static const char usage_graph[] =
    "usage: fusec graph FILE.fc... [--set NAME=VALUE ...] [--dot] [--fast-math]\n"
    "\n"
    "Prints the program's plan: its kernels in execution order (kind, iteration space, the\n"
    "nodes each stores and loads, the ops fused into it) and the fusion boundaries with the\n"
    "reason each was drawn. Nodes are numbered %N as in the plan's walk of the graph.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n"
    "  --dot              writes Graphviz instead (render with: dot -Tsvg -o plan.svg):\n"
    "                     one cluster per kernel, nodes labelled with op, dtype and shape,\n"
    "                     inputs as ellipses, stored outputs with a double border, edges\n"
    "                     between kernels in red, labelled with the boundary's reason; a\n"
    "                     kernel of more than 64 nodes is drawn as one node counting its ops\n"
    "  --fast-math        the plan of the fast-math tier (as FUSEC_FAST_MATH=1)\n";

/* Writes s as the inside of a DOT string: quotes and backslashes escaped, and long text
 * wrapped at spaces every ~40 characters. */
static void dot_text(const char *s, bool wrap) {
    int col = 0;
    for (; *s; s++) {
        if (wrap && *s == ' ' && col >= 40) {
            fputs("\\n", stdout);
            col = 0;
            continue;
        }
        if (*s == '"' || *s == '\\') putchar('\\');
        if (*s == '\n') {
            fputs("\\n", stdout);
            col = 0;
            continue;
        }
        putchar(*s);
        col++;
    }
}

/* The number of node a: fcp_plan_describe's (%N), from fcp_plan_numbering. */
static long long num_of(const fcg_nodemap *num, const fc_array *a) {
    return (long long)fcg_nodemap_get(num, a);
}

/* The label of a node: "%N op\ndtype [shape]". */
static void dot_node_label(const fcg_nodemap *num, const fc_array *a, const char *out_name) {
    char sh[200];
    printf("%%%lld %s\\n%s %s", num_of(num, a), fcg_node_name(a),
           fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
    if (out_name) {
        fputs("\\nout ", stdout);
        dot_text(out_name, false);
    }
}

typedef struct graph_state {
    const cli_opts *o;
    int programs;   /* written so far (dot) */
    bool multi;     /* several files: headers / program clusters */
} graph_state;

static const char *output_name(const cli_program *p, const fcp_plan *plan, const fc_array *a) {
    for (int i = 0; i < plan->nout && i < p->nout; i++)
        if (plan->outs[i] == a) return fc_program_output_name(p->prog, i);
    return NULL;
}

/* Writes the id of node a as drawn in kernel i ("p0k1n5"), or of kernel i's summary node when
 * the kernel is drawn collapsed ("p0k1"). */
static void dot_id(const fcg_nodemap *num, int pi, int i, const fc_array *a,
                   const bool *collapsed) {
    if (collapsed[i]) printf("p%dk%d", pi, i);
    else printf("p%dk%dn%lld", pi, i, num_of(num, a));
}

/* The label of a collapsed kernel: how many ops of each kind it fuses, and what it stores. */
static void dot_summary_label(const cli_program *p, const fcp_plan *plan, const fcg_nodemap *num,
                              const fcp_kernel *k) {
    int counts[FCG_OP_COUNT] = {0};
    for (int q = 0; q < k->nnode; q++) counts[k->nodes[q]->op]++;
    printf("%d fused ops:", k->nnode);
    int shown = 0;
    /* In order of first appearance, a few per line. */
    for (int q = 0; q < k->nnode; q++) {
        int op = k->nodes[q]->op;
        if (!counts[op]) continue;
        printf("%s%s x%d", shown % 4 ? ", " : "\\n", fcg_ops[op].pyname, counts[op]);
        counts[op] = 0;
        shown++;
    }
    char sh[200];
    for (int q = 0; q < k->nout; q++) {
        const fc_array *a = k->outs[q];
        const char *name = output_name(p, plan, a);
        printf("\\nstores %%%lld %s %s %s", num_of(num, a), fcg_node_name(a),
               fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
        if (name) {
            fputs(" (out ", stdout);
            dot_text(name, false);
            fputs(")", stdout);
        }
    }
}

/* Graphviz lays out a few hundred nodes in one cluster very slowly (minutes for W8's 600):
 * a kernel with more nodes than this is drawn as one summary node. */
#define DOT_MAX_KERNEL_NODES 64

static int dot_program(fc_ctx *ctx, const cli_program *p, const fcp_plan *plan, int pi,
                       bool cluster) {
    /* Nodes as fcp_plan_describe numbers them. */
    fcg_nodemap num;
    if (fcp_plan_numbering(plan, &num) != FC_OK) {
        cli_error("%s: %s", p->label, fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    size_t count = num.count;
    /* member[N] == kernel + 1 while that kernel's edges are written; edge_from[N] == kernel + 1
     * once an edge from that node into a collapsed kernel is written (N: the node's number). */
    int *member = calloc(count + 1, sizeof *member);
    int *edge_from = calloc(count + 1, sizeof *edge_from);
    bool *leaf_done = calloc(count + 1, sizeof *leaf_done);
    bool *collapsed = calloc((size_t)plan->nkernel + 1, sizeof *collapsed);
    if (!member || !edge_from || !leaf_done || !collapsed) {
        free(member);
        free(edge_from);
        free(leaf_done);
        free(collapsed);
        fcg_nodemap_free(&num);
        cli_error("out of memory");
        return EXIT_PROGRAM;
    }
    const char *ind = cluster ? "    " : "";
    if (cluster) {
        printf("  subgraph cluster_p%d {\n    label=\"", pi);
        dot_text(p->label, false);
        printf("\";\n    style=dashed;\n");
    }
    char sum[300];
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        collapsed[i] = k->nnode > DOT_MAX_KERNEL_NODES;
        printf("%s  subgraph cluster_p%dk%d {\n%s    label=\"kernel %d: ", ind, pi, i, ind, i);
        dot_text(kernel_summary(k, sum, sizeof sum), false);
        printf("\";\n%s    style=rounded; color=\"#3060a0\";\n", ind);
        if (collapsed[i]) {
            printf("%s    p%dk%d [label=\"", ind, pi, i);
            dot_summary_label(p, plan, &num, k);
            printf("\", peripheries=2];\n");
        }
        for (int q = 0; q < k->nnode && !collapsed[i]; q++) {
            const fc_array *a = k->nodes[q];
            bool stored = false;
            for (int s2 = 0; s2 < k->nout; s2++) stored |= k->outs[s2] == a;
            printf("%s    p%dk%dn%lld [label=\"", ind, pi, i, num_of(&num, a));
            dot_node_label(&num, a, stored ? output_name(p, plan, a) : NULL);
            printf("\"%s];\n", stored ? ", peripheries=2" : "");
        }
        printf("%s  }\n", ind);
    }
    /* Leaves: program inputs and arrays that already hold a value. */
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        for (int l = 0; l < k->nleaf; l++) {
            const fc_array *a = k->leaves[l];
            long long n = num_of(&num, a);
            if (cli_producer(plan, a) >= 0 || leaf_done[n]) continue;
            leaf_done[n] = true;
            printf("%s  p%dn%lld [shape=ellipse, label=\"", ind, pi, n);
            dot_node_label(&num, a, NULL);
            printf("\"];\n");
        }
    }
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        for (int q = 0; q < k->nnode; q++) member[num_of(&num, k->nodes[q])] = i + 1;
        for (int q = 0; q < k->nnode; q++) {
            const fc_array *a = k->nodes[q];
            for (int c = 0; c < a->nin; c++) {
                const fc_array *in = a->in[c];
                long long n = num_of(&num, in);
                if (member[n] == i + 1) {
                    if (collapsed[i]) continue;
                    printf("%s  p%dk%dn%lld -> p%dk%dn%lld;\n", ind, pi, i, n, pi, i,
                           num_of(&num, a));
                    continue;
                }
                if (collapsed[i]) { /* one edge per source into a collapsed kernel */
                    if (edge_from[n] == i + 1) continue;
                    edge_from[n] = i + 1;
                }
                int prod = cli_producer(plan, in);
                printf("%s  ", ind);
                if (prod < 0) printf("p%dn%lld", pi, n);
                else dot_id(&num, pi, prod, in, collapsed);
                printf(" -> ");
                dot_id(&num, pi, i, a, collapsed);
                if (prod < 0) {
                    printf(";\n");
                    continue;
                }
                printf(" [color=red, fontcolor=red, style=bold, label=\"");
                dot_text(cli_boundary_reason(plan, in), true);
                printf("\"];\n");
            }
        }
    }
    if (cluster) printf("  }\n");
    free(member);
    free(edge_from);
    free(leaf_done);
    free(collapsed);
    fcg_nodemap_free(&num);
    return EXIT_OK;
}

/* True if some kernel loads node a (stored by another). */
static bool loaded_elsewhere(const fcp_plan *plan, const fc_array *a) {
    for (int j = 0; j < plan->nkernel; j++)
        for (int l = 0; l < plan->kernels[j].nleaf; l++)
            if (plan->kernels[j].leaves[l] == a) return true;
    return false;
}

/* The description lists the boundaries the fusion pass recorded; a stored array that another
 * kernel loads for another reason (an output asked for, a library call) is one too. Nodes are
 * numbered as in the description (num). */
static void print_implicit_boundaries(const fcp_plan *plan, const fcg_nodemap *num) {
    char sh[200];
    for (int i = 0; i < plan->nkernel; i++)
        for (int q = 0; q < plan->kernels[i].nout; q++) {
            const fc_array *a = plan->kernels[i].outs[q];
            bool recorded = false;
            for (int b = 0; b < plan->nboundary; b++) recorded |= plan->boundaries[b].node == a;
            if (recorded || !loaded_elsewhere(plan, a)) continue;
            printf("boundary at %%%lld %s %s%s: %s\n", num_of(num, a), fcg_node_name(a),
                   fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape),
                   cli_boundary_reason(plan, a));
        }
}

static int graph_one(fc_ctx *ctx, const cli_program *p, void *user) {
    graph_state *gs = user;
    fck_result *r;
    int rc = cli_plan(ctx, p, &r);
    if (rc) return rc;
    const fcp_plan *plan = r->plan;
    if (gs->o->dot) {
        rc = dot_program(ctx, p, plan, gs->programs, gs->multi || p->count > 1);
    } else {
        char *d = fcp_plan_describe(plan);
        fcg_nodemap num;
        if (!d || fcp_plan_numbering(plan, &num) != FC_OK) {
            fcg_strfree(ctx, d);
            cli_error("%s: out of memory describing the plan", p->label);
            rc = EXIT_PROGRAM;
        } else {
            if (gs->multi || p->count > 1)
                printf("%sprogram %s\n", gs->programs ? "\n" : "", p->label);
            fputs(d, stdout);
            fcg_strfree(ctx, d);
            print_implicit_boundaries(plan, &num);
            fcg_nodemap_free(&num);
        }
    }
    gs->programs++;
    fck_result_free(r);
    if (!rc && (ferror(stdout) || fflush(stdout) != 0)) rc = write_error();
    return rc;
}

int cmd_graph(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("graph", argc, argv, OPT_SET | OPT_DOT | OPT_FILES | OPT_FAST_MATH, &o);
    if (rc || o.help) {
        rc = cli_usage(usage_graph, &o, rc);
        cli_opts_free(&o);
        return rc;
    }
    fc_ctx *ctx;
    if (!(rc = cli_open_ctx(FC_BACKEND_HOST, NULL, o.fast_math, &ctx))) {
        graph_state gs = {&o, 0, o.nfiles > 1};
        if (o.dot) {
            printf("digraph fusec {\n  graph [fontname=\"Helvetica\", label=\"fusec plan: ");
            for (int i = 0; i < o.nfiles; i++) {
                dot_text(o.files[i], false);
                if (i + 1 < o.nfiles) fputs(", ", stdout);
            }
            printf("\", labelloc=t];\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
                   "  edge [fontname=\"Helvetica\", fontsize=9];\n");
        }
        /* Stop at the first failure: half a graph is not worth writing. */
        for (int i = 0; i < o.nfiles && !rc; i++)
            rc = cli_for_each_program(ctx, &o, o.files[i], false, true, graph_one, &gs);
        if (o.dot) printf("}\n");
        if (!rc) rc = cli_check_sets_used(&o);
        if (!rc && fflush(stdout) != 0) rc = write_error();
        fc_ctx_destroy(ctx);
    }
    cli_opts_free(&o);
    return rc;
}

/* ---- explain ------------------------------------------------------------------------------ */

static const char usage_explain[] =
    "usage: fusec explain FILE.fc... [--set NAME=VALUE ...] [--arch sm_XX] [--cache-dir DIR]\n"
    "                     [--fast-math]\n"
    "\n"
    "Says why the program compiles to the kernels it does, and whether they are cached:\n"
    "\n"
    "  - every fusion boundary: which kernel stores an array that which kernels load, and why\n"
    "    the two sides were not fused (the reason the fusion pass recorded, or that the array\n"
    "    was asked for as an output, or that a library call needs a stored buffer);\n"
    "  - every kernel: in the cache for the architecture or not, and for a miss the nearest\n"
    "    entry in the cache and which key fields differ (source, arch, options, codegen or\n"
    "    NVRTC version, ...);\n"
    "  - the program's plan entry: cached or not (it lets a new process skip generating the\n"
    "    kernels' source to find them; written by the first run and by fusec warm).\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n"
    "  --arch sm_XX       the architecture to look up (default " CLI_DEFAULT_ARCH ")\n"
    "  --cache-dir DIR    the kernel cache (default: $FUSEC_CACHE_DIR, $XDG_CACHE_HOME/fusec,\n"
    "                     ~/.cache/fusec); opened read-only\n"
    "  --fast-math        the kernels of the fast-math tier (as FUSEC_FAST_MATH=1), said on a\n"
    "                     line 'math tier: fast ...' after the program's\n";

typedef struct explain_state {
    const cli_opts *o;
    fcc_cache *cache;
    int programs;
    int misses;
} explain_state;

static int explain_one(fc_ctx *ctx, const cli_program *p, void *user) {
    explain_state *es = user;
    const char *arch = es->o->archs[0];
    fck_options co = fck_options_default();
    co.stage = FCK_LOOKUP; /* a question: nothing is compiled */
    co.archs = &arch;
    co.narch = 1;
    co.cache = es->cache;
    fck_result *r;
    int rc = cli_compile(ctx, p, &co, &r);
    if (rc) {
        fck_result_free(r);
        return rc;
    }
    const fcp_plan *plan = r->plan;
    char sum[300], sh[200];
    printf("%sprogram %s: %d kernel%s\n", es->programs++ ? "\n" : "", p->label, plan->nkernel,
           plan->nkernel == 1 ? "" : "s");
    if (fc_ctx_fast_math(ctx)) printf("math tier: %s\n", cli_math_tier(ctx));
    /* Boundaries: each stored array that another kernel loads, with its consumers. */
    int nb = 0;
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        for (int q = 0; q < k->nout; q++) {
            const fc_array *a = k->outs[q];
            int consumers = 0;
            for (int j = 0; j < plan->nkernel; j++)
                for (int l = 0; l < plan->kernels[j].nleaf; l++)
                    if (plan->kernels[j].leaves[l] == a) {
                        if (consumers++ == 0) {
                            if (nb++ == 0) printf("boundaries:\n");
                            printf("  kernel %d -> kernel %d", i, j);
                        } else {
                            printf(", %d", j);
                        }
                    }
            if (!consumers) continue;
            printf(": %s %s%s is stored: %s\n", fcg_node_name(a),
                   fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape),
                   cli_boundary_reason(plan, a));
        }
    }
    if (nb == 0)
        printf("boundaries: none%s\n", plan->nkernel == 1 ? " (the program is one kernel)" : "");
    printf("kernels (%s):\n", arch);
    for (int i = 0; !rc && i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        printf("  kernel %d: %s: ", i, kernel_summary(k, sum, sizeof sum));
        if (k->kind == FCP_KERNEL_LIB) {
            const fc_array *o = k->outs[0];
            if (o->op == FCG_OP_SORT || o->op == FCG_OP_ARGSORT)
                printf("a library call to fusec's radix sort kernels (one cached module for "
                       "%s elements, built by warm and on first use)\n",
                       fc_dtype_name((fc_dtype)o->in[0]->dtype));
            else if (o->op == FCG_OP_STENCIL2D)
                printf("a library call to fusec's stencil kernel (one cached module for %s, "
                       "a %lldx%lld kernel and its boundary, built by warm and on first use)\n",
                       fc_dtype_name((fc_dtype)o->dtype), (long long)o->in[1]->shape[0],
                       (long long)o->in[1]->shape[1]);
            else {
                fcp_epilogue epi;
                if (fcp_lib_epilogue(k, &epi))
                    printf("a library call to cuBLASLt, the product's kernel applying %s "
                           "(its epilogue), nothing to compile\n", fcp_epilogue_name(&epi));
                else
                    printf("a library call, nothing to compile\n");
            }
            continue;
        }
        if (i >= r->nkernel) { /* the kernel whose source or key failed */
            printf("\n");
            rc = cli_compile_failed(ctx, p, r);
            break;
        }
        const fck_target *t = &r->kernels[i].targets[0];
        char hex[33];
        fcc_key_to_hex(&t->key, hex);
        if (t->state == FCK_CACHED) {
            printf("cached (key %s)\n", hex);
        } else if (t->state == FCK_MISSED) {
            printf("not cached (key %s): %s\n", hex, t->message);
            es->misses++;
        } else { /* the lookup failed: a cache that cannot be read */
            printf("\n");
            cli_error("%s", t->message ? t->message : fc_strerror(t->status));
            rc = t->status == FC_ERR_NOMEM ? EXIT_PROGRAM : EXIT_IO;
        }
    }
    int ngen = 0;
    for (int i = 0; i < plan->nkernel; i++) ngen += plan->kernels[i].kind != FCP_KERNEL_LIB;
    if (!rc && !ngen)
        printf("plan entry (%s): none needed (no generated kernel)\n", arch);
    else if (!rc && r->plan_entry == FCK_PLAN_HIT)
        printf("plan entry (%s): cached: a new process's first run takes its kernels' keys and "
               "launch recipes from it, without generating their source\n", arch);
    else if (!rc && r->plan_entry == FCK_PLAN_STALE)
        printf("plan entry (%s): unusable (damaged, or not this plan's): ignored, and written "
               "again by the next run that compiles the program\n", arch);
    else if (!rc)
        printf("plan entry (%s): not cached (written by the first run that compiles the "
               "program, or by fusec warm)\n", arch);
    fck_result_free(r);
    if (!rc && (ferror(stdout) || fflush(stdout) != 0)) rc = write_error();
    return rc;
}

int cmd_explain(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("explain", argc, argv,
                       OPT_SET | OPT_ARCH | OPT_CACHE_DIR | OPT_FILES | OPT_FAST_MATH, &o);
    if (rc || o.help) {
        rc = cli_usage(usage_explain, &o, rc);
        cli_opts_free(&o);
        return rc;
    }
    fcc_options co = fcc_options_default();
    co.dir = o.cache_dir;
    co.read_only = true; /* a question changes nothing */
    co.require_cached = 0;
    fcc_cache *cache = NULL;
    fc_status st = fcc_open(&co, &cache);
    if (st != FC_OK) {
        cli_error("cannot open the kernel cache: %s", fc_strerror(st));
        cli_opts_free(&o);
        return st == FC_ERR_NOMEM ? EXIT_PROGRAM : EXIT_IO;
    }
    const char *w = fcc_take_warning(cache);
    if (w) cli_warn("%s", w);
    fc_ctx *ctx;
    if (!(rc = cli_open_ctx(FC_BACKEND_HOST, NULL, o.fast_math, &ctx))) {
        explain_state es = {&o, cache, 0, 0};
        printf("cache: %s\n", fcc_dir(cache) ? fcc_dir(cache) : "(none)");
        for (int i = 0; i < o.nfiles; i++) {
            int r = cli_for_each_program(ctx, &o, o.files[i], false, false, explain_one, &es);
            if (r && !rc) rc = r;
        }
        if (!rc) rc = cli_check_sets_used(&o);
        fc_ctx_destroy(ctx);
    }
    fcc_close(cache);
    cli_opts_free(&o);
    return rc;
}
