"""Writes scan_v1..v5.cu beside scan_v0.cu (argv[1]): see scan_variants.sh."""
import os
import sys

d = sys.argv[1]
src = open(os.path.join(d, 'scan_v0.cu')).read()
head, kern = src.split('extern "C" __global__', 1)
kern = 'extern "C" __global__' + kern
first_load = kern[kern.index('        acc_t u[IT];'):kern.index(
    '        #pragma unroll\n        for (int k = 0; k < IT; k++) s_val[FCX_SCAN_PAD(c0w + k * FCX_WARP + lane)] = u[k];')]
load = '''        #pragma unroll
        for (int k = 0; k < IT; k++) {
            const idx_t j = (idx_t)(c0w + k * FCX_WARP + lane);
            u[k] = (fcx_ct_f64)-0.0;
            if (j < nlen) {
                const idx_t i = nrow * L + nl0 + j;
                u[k] = fcx_cast_f64(fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i));
            }
        }
'''
tile_of = '''        const idx_t nrow = (idx_t)(%s / T), nl0 = (idx_t)(%s %% T * TS);
        const idx_t nlen = L - nl0 < (idx_t)TS ? L - nl0 : (idx_t)TS;
'''
v1 = kern.replace('''    for (;;) {
        const long long tile = s_next;
''', '''    long long tile = s_next;
    acc_t u[IT];
    if (tile < ntiles) {
''' + tile_of % ('tile', 'tile') + load + '''    }
    for (;;) {
''', 1).replace(first_load, '', 1)
store = '''        fcx_syncwarp();
        #pragma unroll
        for (int k = 0; k < IT; k++) {
            const int jc = k * FCX_WARP + lane;'''
v1 = v1.replace(store, '''        fcx_syncwarp();
        const long long ntile = s_next;
        if (ntile < ntiles) {
''' + tile_of % ('ntile', 'ntile') + load + '''        }
        #pragma unroll
        for (int k = 0; k < IT; k++) {
            const int jc = k * FCX_WARP + lane;''', 1)
end = "        fcx_syncwarp(); /* the chunk's reads before the next tile's writes */\n    }"
v1 = v1.replace(end, end[:-6] + "\n        tile = ntile;\n    }", 1)
pad = '#define FCX_SCAN_PAD(j) ((j) + (j) / 32)'
blocks = lambda s, n: s.replace('__launch_bounds__(256, 5)', '__launch_bounds__(256, %d)' % n)
variants = {1: head + v1, 2: head + blocks(v1, 4), 3: head + blocks(kern, 6),
            4: src.replace(pad, pad.replace('32)', '16)')),
            5: blocks(src.replace(pad, pad.replace('32)', '16)')), 6)}
for k, text in variants.items():
    open(os.path.join(d, 'scan_v%d.cu' % k), 'w').write(text)
