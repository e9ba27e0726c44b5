/*
 * codegen/sort.cuh - fusec's radix sort kernels (np.sort / np.argsort on the GPU).
 *
 * Compiled by NVRTC once per element type: codegen/sort.c puts these defines in front:
 *   FCS_WORD        the unsigned type of one word of an element (1, 2, 4 or 8 bytes)
 *   FCS_BITS        its bits
 *   FCS_KIND        0 unsigned or bool, 1 signed integer, 2 IEEE float
 *   FCS_EXP, FCS_MAN (floats) the exponent and mantissa masks of a word
 *   FCS_NWORDS      1, or 2 for complex (real word, then imaginary word)
 *   FCS_ITEMS       elements a thread holds in a tile (a tile is 256 * FCS_ITEMS elements)
 * backend/cuda_sort.c launches them.
 *
 * The order is NumPy's: an element's key is a string of digits whose unsigned order is the
 * sort order. Integers flip the sign bit; floats map to the usual order-preserving unsigned
 * image, with every NaN mapped to the largest key and -0.0 to +0.0's key, so elements NumPy
 * holds equal have equal keys (the elements themselves move with their bits). Complex
 * numbers sort by (class, real, imaginary) where the class is 2 * isnan(re) + isnan(im) and a
 * NaN part's key is 0, which is NumPy's [R + Rj, R + nanj, nan + Rj, nan + nanj]. Keys are
 * computed from the element at every pass, never stored.
 *
 * LSD radix sort, 8 bits a pass, each pass stable; ties keep their input order, so the sort
 * is stable. A pass over the whole array is three kernels: each block counts the digits of
 * its chunk (fcs_upsweep, counts[d][b]), one block a digit turns its row of counts into
 * offsets and a total (fcs_scan), and each block moves its chunk's elements to the digit's
 * start (the totals of smaller digits, summed by every block) plus its offset (fcs_downsweep). A pass has a "part" (0 the value or real word, 1 the imaginary word, 2 the complex
 * class, 3 the row: position / row_len) and a shift. Rows sorted by passes over the whole
 * array end with row passes, which regroup each row's elements in their sorted order.
 *
 * Ranking a tile: warp w holds the tile's elements [w * 32 * FCS_ITEMS, (w + 1) * 32 * FCS_ITEMS),
 * round r of lane l element w * 32 * FCS_ITEMS + 32 r + l (so loads coalesce and the order is
 * (warp, round, lane)). Each warp ranks its own elements with a histogram of its own: per
 * round the lanes with one digit find each other (each ORs its bit into the warp's word for
 * the digit and reads the word back: faster than __match_any_sync, whose cost grows with the
 * number of distinct digits), the lowest of them reads and advances the warp's count of the
 * digit and clears the word, and each lane's rank is that count plus the peers below it. Then the warps' counts become offsets (thread d sums digit d over the
 * warps in order) and the digits' totals are scanned: an element's place is its digit's start
 * in the tile, plus the earlier warps' elements of the digit, plus its rank in its warp. Three
 * block barriers a tile, whatever FCS_ITEMS is.
 */
typedef unsigned int fcs_u32;
typedef unsigned long long fcs_u64;
typedef FCS_WORD fcs_word;

#define FCS_THREADS 256
#define FCS_WARPS (FCS_THREADS / 32)
#define FCS_TILE (FCS_THREADS * FCS_ITEMS)
#define FCS_SIGN ((fcs_word)((fcs_word)1 << (FCS_BITS - 1)))

struct fcs_elem {
    fcs_word w[FCS_NWORDS];
};

/* A block's shared memory; IDX: elements carry their indices (argsort, row passes). */
template <bool IDX> struct fcs_shared {
    union {
        struct {
            fcs_elem k[FCS_TILE];          /* the ranked tile */
            fcs_u32 i[IDX ? FCS_TILE : 1]; /* its indices */
        } tile;
        fcs_u32 match[FCS_WARPS][256]; /* while ranking: each warp's lanes holding each digit */
    } u;
    unsigned char d[FCS_TILE];  /* the ranked tile's digits */
    unsigned short wh[FCS_WARPS][256]; /* each warp's count of each digit, then the count
                                          before it (at most a tile) */
    fcs_u32 run[256];           /* each digit's count in the tile */
    fcs_u32 tile_off[256];      /* where each digit's elements start in the ranked tile */
    fcs_u32 base[256];          /* where the block's next element of each digit goes */
    fcs_u32 delta[256];         /* base - tile_off: ranked element j of digit d goes to j + delta[d] */
    fcs_u32 wsum[FCS_WARPS];
};

#if FCS_KIND == 2
static __device__ __forceinline__ bool fcs_isnan(fcs_word u) {
    return (u & (fcs_word)FCS_EXP) == (fcs_word)FCS_EXP && (u & (fcs_word)FCS_MAN) != 0;
}
#endif

/* The order-preserving unsigned image of a word. */
static __device__ __forceinline__ fcs_word fcs_key(fcs_word u) {
#if FCS_KIND == 0
    return u;
#elif FCS_KIND == 1
    return (fcs_word)(u ^ FCS_SIGN);
#else
    if (fcs_isnan(u)) return (fcs_word)~(fcs_word)0;
    if (u == FCS_SIGN) u = 0; /* -0.0 sorts as 0.0 */
    return (u & FCS_SIGN) ? (fcs_word)~u : (fcs_word)(u | FCS_SIGN);
#endif
}

static __device__ __forceinline__ fcs_u32 fcs_digit(const fcs_elem &e, fcs_u32 ix, int part,
                                                    int shift, fcs_u32 row_len) {
    fcs_u64 v;
    if (part == 3) {
        v = ix / row_len;
    } else {
#if FCS_NWORDS == 2
        bool nr = fcs_isnan(e.w[0]), ni = fcs_isnan(e.w[1]);
        if (part == 2) v = (nr ? 2u : 0u) | (ni ? 1u : 0u);
        else if (part == 0) v = nr ? 0 : (fcs_u64)fcs_key(e.w[0]);
        else v = ni ? 0 : (fcs_u64)fcs_key(e.w[1]);
#else
        v = (fcs_u64)fcs_key(e.w[0]);
#endif
    }
    return (fcs_u32)(v >> shift) & 255u;
}

/* Where element r of this thread sits in the tile (warps hold runs of 32 * FCS_ITEMS). */
static __device__ __forceinline__ int fcs_slot(int r) {
    return (threadIdx.x >> 5) * (32 * FCS_ITEMS) + r * 32 + (threadIdx.x & 31);
}

/* The exclusive prefix sum of v over the block's threads, in thread order (two barriers;
 * wsum is scratch). */
static __device__ __forceinline__ fcs_u32 fcs_block_scan(fcs_u32 *wsum, fcs_u32 v) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    fcs_u32 x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        fcs_u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) wsum[w] = x;
    __syncthreads();
    fcs_u32 before = 0;
    for (int q = 0; q < w; q++) before += wsum[q];
    __syncthreads();
    return before + x - v;
}

/* Ranks the tile's elements by their digits dg[r] (element r of this thread at fcs_slot(r);
 * 256 for a slot past the tile's end), stably: on return pos[r] is element r's place in the
 * ranked tile, s.run[d] counts digit d in the tile and s.tile_off[d] is where it starts. s.wh
 * must be 0 on entry; the caller clears it (fcs_clear) once every thread is done with it. */
template <class S>
static __device__ __forceinline__ void fcs_rank(S &s, const fcs_u32 (&dg)[FCS_ITEMS],
                                                fcs_u32 (&pos)[FCS_ITEMS]) {
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    const fcs_u32 below_mask = (1u << lane) - 1u;
#pragma unroll
    for (int r = 0; r < FCS_ITEMS; r++) {
        fcs_u32 d = dg[r];
        bool valid = d < 256u;
        if (valid) atomicOr(&s.u.match[w][d], 1u << lane);
        __syncwarp();
        fcs_u32 peers = valid ? s.u.match[w][d] : 1u << lane;
        __syncwarp();
        int leader = __ffs(peers) - 1;
        fcs_u32 before = 0;
        if (valid && lane == leader) {
            before = s.wh[w][d];
            s.wh[w][d] = (unsigned short)(before + __popc(peers));
            s.u.match[w][d] = 0;
        }
        before = __shfl_sync(0xffffffffu, before, leader);
        pos[r] = before + __popc(peers & below_mask);
    }
    __syncthreads();
    /* the warps' counts of digit t become the counts before each warp */
    fcs_u32 c = 0;
#pragma unroll
    for (int q = 0; q < FCS_WARPS; q++) {
        fcs_u32 h = s.wh[q][t];
        s.wh[q][t] = (unsigned short)c;
        c += h;
    }
    s.run[t] = c;
    s.tile_off[t] = fcs_block_scan(s.wsum, c);
    __syncthreads();
#pragma unroll
    for (int r = 0; r < FCS_ITEMS; r++)
        if (dg[r] < 256u) pos[r] += s.tile_off[dg[r]] + s.wh[w][dg[r]];
}

/* Before a tile is ranked, once every thread is past its reads of the last one (the match
 * words share the ranked tile's memory): the warps' histograms and match words to 0. */
template <class S> static __device__ __forceinline__ void fcs_clear(S &s) {
#pragma unroll
    for (int q = 0; q < FCS_WARPS; q++) {
        s.wh[q][threadIdx.x] = 0;
        s.u.match[q][threadIdx.x] = 0;
    }
}

/* Pass, step 1: block b counts the digits of elements [b * chunk, (b + 1) * chunk) into
 * counts[d * gridDim.x + b]. ix == 0: an element's index is its position. */
extern "C" __global__ void __launch_bounds__(FCS_THREADS, 4)
fcs_upsweep(const fcs_elem *__restrict__ keys, const fcs_u32 *__restrict__ ix, fcs_u64 n,
            fcs_u32 row_len, int part, int shift, fcs_u64 chunk, fcs_u32 *__restrict__ counts) {
    __shared__ fcs_u32 hist[FCS_WARPS][256];
    const int t = threadIdx.x, w = t >> 5;
#pragma unroll
    for (int q = 0; q < FCS_WARPS; q++) hist[q][t] = 0;
    __syncthreads();
    fcs_u64 lo = (fcs_u64)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
    for (fcs_u64 at = lo; at < hi; at += FCS_TILE) {
        fcs_elem k[FCS_ITEMS];
        fcs_u32 x[FCS_ITEMS];
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++) { /* every load of the tile first */
            fcs_u64 j = at + (fcs_u64)(r * FCS_THREADS + t);
            if (j < hi) {
                if (part != 3) k[r] = keys[j];
                x[r] = ix ? ix[j] : (fcs_u32)j;
            }
        }
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++)
            if (at + (fcs_u64)(r * FCS_THREADS + t) < hi)
                atomicAdd(&hist[w][fcs_digit(k[r], x[r], part, shift, row_len)], 1u);
    }
    __syncthreads();
    fcs_u32 c = 0;
#pragma unroll
    for (int q = 0; q < FCS_WARPS; q++) c += hist[q][t];
    counts[(fcs_u64)t * gridDim.x + blockIdx.x] = c;
}

/* Pass, step 2: block d turns counts[d][0..blocks) into exclusive prefix sums (where block b's
 * elements of digit d go among that digit's) and writes the digit's total to totals[d]. */
extern "C" __global__ void __launch_bounds__(FCS_THREADS)
fcs_scan(fcs_u32 *__restrict__ counts, fcs_u32 *__restrict__ totals, fcs_u32 blocks) {
    __shared__ fcs_u32 wsum[FCS_WARPS];
    fcs_u32 *row = counts + (fcs_u64)blockIdx.x * blocks;
    fcs_u32 carry = 0;
    for (fcs_u32 at = 0; at < blocks; at += FCS_THREADS) {
        fcs_u32 j = at + threadIdx.x;
        fcs_u32 c = j < blocks ? row[j] : 0u;
        fcs_u32 before = fcs_block_scan(wsum, c);
        if (j < blocks) row[j] = carry + before;
        if (threadIdx.x == FCS_THREADS - 1) wsum[0] = before + c; /* the slice's total */
        __syncthreads();
        carry += wsum[0];
        __syncthreads();
    }
    if (threadIdx.x == 0) totals[blockIdx.x] = carry;
}

/* Pass, step 3: block b moves its chunk's elements (and indices, when IDX) to their places,
 * tile by tile in order. kout == 0: the keys are not written (argsort's last key pass); a row
 * pass without kout does not read them either. */
template <bool IDX>
static __device__ __forceinline__ void fcs_downsweep_tiles(
    fcs_shared<IDX> &s, const fcs_elem *__restrict__ kin, const fcs_u32 *__restrict__ iin,
    fcs_elem *__restrict__ kout, fcs_u32 *__restrict__ iout, fcs_u64 n, fcs_u32 row_len,
    int part, int shift, fcs_u64 chunk, const fcs_u32 *__restrict__ counts,
    const fcs_u32 *__restrict__ totals) {
    const int t = threadIdx.x;
    fcs_u32 start = fcs_block_scan(s.wsum, totals[t]);
    s.base[t] = start + counts[(fcs_u64)t * gridDim.x + blockIdx.x];
    fcs_clear(s);
    __syncthreads();
    const bool keys_move = part != 3 || kout;
    fcs_u64 lo = (fcs_u64)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
    for (fcs_u64 at = lo; at < hi; at += FCS_TILE) {
        int m = hi - at < (fcs_u64)FCS_TILE ? (int)(hi - at) : FCS_TILE;
        fcs_elem k[FCS_ITEMS];
        fcs_u32 ix[IDX ? FCS_ITEMS : 1], pos[FCS_ITEMS], dg[FCS_ITEMS];
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++) { /* every load of the tile first */
            int j = fcs_slot(r);
            fcs_u64 g = at + (fcs_u64)j;
            if (j < m) {
                if (keys_move) k[r] = kin[g];
                if (IDX) ix[r] = iin ? iin[g] : (fcs_u32)g;
            }
        }
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++)
            dg[r] = fcs_slot(r) < m ? fcs_digit(k[r], IDX ? ix[r] : 0u, part, shift,
                                                row_len)
                                    : 256u;
        fcs_rank(s, dg, pos);
        s.delta[t] = s.base[t] - s.tile_off[t];
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++)
            if (dg[r] < 256u) {
                if (keys_move) s.u.tile.k[pos[r]] = k[r];
                if (IDX) s.u.tile.i[pos[r]] = ix[r];
                s.d[pos[r]] = (unsigned char)dg[r];
            }
        __syncthreads();
        for (int j = t; j < m; j += FCS_THREADS) {
            fcs_u64 g = (fcs_u64)(fcs_u32)(s.delta[s.d[j]] + (fcs_u32)j);
            if (kout) kout[g] = s.u.tile.k[j];
            if (IDX) iout[g] = s.u.tile.i[j];
        }
        __syncthreads();
        s.base[t] += s.run[t];
        fcs_clear(s);
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(FCS_THREADS, 4)
fcs_downsweep(const fcs_elem *__restrict__ kin, fcs_elem *__restrict__ kout, fcs_u64 n,
              int part, int shift, fcs_u64 chunk, const fcs_u32 *__restrict__ counts,
              const fcs_u32 *__restrict__ totals) {
    __shared__ fcs_shared<false> s;
    fcs_downsweep_tiles<false>(s, kin, 0, kout, 0, n, 1u, part, shift, chunk, counts, totals);
}

extern "C" __global__ void __launch_bounds__(FCS_THREADS, 3)
fcs_downsweep_idx(const fcs_elem *__restrict__ kin, const fcs_u32 *__restrict__ iin,
                  fcs_elem *__restrict__ kout, fcs_u32 *__restrict__ iout, fcs_u64 n,
                  fcs_u32 row_len, int part, int shift, fcs_u64 chunk,
                  const fcs_u32 *__restrict__ counts, const fcs_u32 *__restrict__ totals) {
    __shared__ fcs_shared<true> s;
    fcs_downsweep_tiles<true>(s, kin, iin, kout, iout, n, row_len, part, shift, chunk, counts,
                              totals);
}

/* Rows of at most a tile: block b sorts rows b, b + gridDim.x, ... through shared memory,
 * every pass, and writes the sorted elements (kout) or their int64 positions (iout). */
extern "C" __global__ void __launch_bounds__(FCS_THREADS)
fcs_rows(const fcs_elem *__restrict__ kin, fcs_elem *__restrict__ kout,
         long long *__restrict__ iout, fcs_u64 rows, int row_len) {
    __shared__ fcs_shared<true> s;
    fcs_clear(s);
    __syncthreads();
    for (fcs_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const fcs_elem *src = kin + row * (fcs_u64)row_len;
        fcs_elem k[FCS_ITEMS];
        fcs_u32 ix[FCS_ITEMS], pos[FCS_ITEMS], dg[FCS_ITEMS];
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++) {
            int j = fcs_slot(r);
            if (j < row_len) k[r] = src[j];
            ix[r] = (fcs_u32)j;
        }
        /* the passes: for complex the imaginary words, the real words, then the class */
        const int parts = FCS_NWORDS == 2 ? 3 : 1;
        for (int p = 0; p < parts; p++) {
            int part = FCS_NWORDS == 2 ? (p == 0 ? 1 : p == 1 ? 0 : 2) : 0;
            int bits = part == 2 ? 8 : FCS_BITS;
            for (int shift = 0; shift < bits; shift += 8) {
#pragma unroll
                for (int r = 0; r < FCS_ITEMS; r++)
                    dg[r] = fcs_slot(r) < row_len ? fcs_digit(k[r], 0u, part, shift, 1u) : 256u;
                fcs_rank(s, dg, pos);
#pragma unroll
                for (int r = 0; r < FCS_ITEMS; r++)
                    if (dg[r] < 256u) {
                        s.u.tile.k[pos[r]] = k[r];
                        s.u.tile.i[pos[r]] = ix[r];
                    }
                __syncthreads();
#pragma unroll
                for (int r = 0; r < FCS_ITEMS; r++) {
                    int j = fcs_slot(r);
                    if (j < row_len) {
                        k[r] = s.u.tile.k[j];
                        ix[r] = s.u.tile.i[j];
                    }
                }
                __syncthreads(); /* every read of the tile before the match words clear it */
                fcs_clear(s);
                __syncthreads();
            }
        }
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++) {
            int j = fcs_slot(r);
            if (j < row_len) {
                if (kout) kout[row * (fcs_u64)row_len + j] = k[r];
                else iout[row * (fcs_u64)row_len + j] = (long long)ix[r];
            }
        }
    }
}

/* argsort's result from the sorted indices: each one's position within its row. */
extern "C" __global__ void fcs_finish(const fcs_u32 *__restrict__ ix, long long *__restrict__ out,
                                      fcs_u64 n, fcs_u32 row_len) {
    for (fcs_u64 j = (fcs_u64)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += (fcs_u64)gridDim.x * blockDim.x)
        out[j] = (long long)(ix[j] % row_len);
}
