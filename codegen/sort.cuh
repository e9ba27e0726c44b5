/*
 * codegen/sort.cuh - fusec's radix sort kernels (np.sort / np.argsort on the GPU).
 *
 * Compiled by NVRTC once per element type: codegen/sort.c puts these defines in front:
 *   FCS_WORD        the unsigned type of one word of an element (1, 2, 4 or 8 bytes)
 *   FCS_BITS        its bits
 *   FCS_KIND        0 unsigned or bool, 1 signed integer, 2 IEEE float
 *   FCS_EXP, FCS_MAN (floats) the exponent and mantissa masks of a word
 *   FCS_NWORDS      1, or 2 for complex (real word, then imaginary word)
 *   FCS_ITEMS       elements a thread holds in a tile of fcs_rows and fcs_hist
 *   FCS_PITEMS      elements a thread holds in a tile of a keys-only pass (fcs_pass)
 *   FCS_PITEMS_IDX  the same for a pass that moves indices too (fcs_pass_idx)
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
 * is stable. A pass has a "part" (0 the value or real word, 1 the imaginary word, 2 the
 * complex class, 3 the row: position / row_len) and a shift. Rows of up to a tile sort in one
 * block each (fcs_rows). Longer rows sort by passes over the whole array, onesweep style
 * (Adinets and Merrill, 2022): one read of the keys counts the digits of every key pass
 * (fcs_hist), one small kernel turns the counts into each digit's start (fcs_scan), then each
 * pass is one kernel that reads and writes every element once (fcs_pass): its blocks take
 * tiles in order from a ticket counter, rank each tile in shared memory, find how many
 * elements of each digit the earlier tiles hold by a decoupled look-back over the tiles'
 * published counts, and write the ranked tile out, each digit's run contiguous. Rows sorted
 * by passes over the whole array end with row passes, which regroup each row's elements in
 * their sorted order.
 *
 * Ranking a tile: warp w holds the tile's elements [w * 32 * N, (w + 1) * 32 * N) (N elements
 * a thread), round r of lane l element w * 32 * N + 32 r + l (so loads coalesce and the order
 * is (warp, round, lane)). Each warp ranks its own elements with counts of its own: per round
 * the lanes with one digit find each other through an atomic OR into the warp's word for the
 * digit (CUB's "match by atomic or": a handful of instructions a round, where matching by a
 * ballot a bit of the digit takes some forty and __match_any_sync grows with the number of
 * distinct digits), and the highest of them advances the warp's count of the digit. Then
 * thread d turns the warps' counts of digit d into the counts before each warp, the digits'
 * totals are scanned, and each warp's count becomes the place of its first element of the
 * digit in the ranked tile. A pass writes the ranked tile out from shared memory, so that
 * consecutive threads write consecutive places of a digit's run; a keys-only pass keeps the
 * ranked digits beside the elements rather than computing them again.
 */
typedef unsigned int fcs_u32;
typedef unsigned long long fcs_u64;
typedef FCS_WORD fcs_word;

#define FCS_THREADS 256
#define FCS_WARPS (FCS_THREADS / 32)
#define FCS_TILE (FCS_THREADS * FCS_ITEMS)
#define FCS_SIGN ((fcs_word)((fcs_word)1 << (FCS_BITS - 1)))
#define FCS_ALL 0xffffffffu

/* The key passes (every pass but the row passes), least significant first: for complex the
 * imaginary words' digits, the real words', then the class; backend/cuda_sort.c's passes_of
 * lists them in the same order. */
#if FCS_NWORDS == 2
#define FCS_KPASSES (2 * (FCS_BITS / 8) + 1)
#else
#define FCS_KPASSES (FCS_BITS / 8)
#endif

struct fcs_elem {
    fcs_word w[FCS_NWORDS];
};

/* A block's shared memory for tiles of TILE elements; IDX: elements carry their indices. */
template <int TILE, bool IDX> struct fcs_shared {
    union {
        struct {
            fcs_elem k[TILE];          /* the ranked tile */
            fcs_u32 i[IDX ? TILE : 1]; /* its indices */
        } t;
        fcs_u32 match[FCS_WARPS][256]; /* while ranking: each warp's lanes holding each digit */
    } u;
    unsigned short wh[FCS_WARPS][256]; /* each warp's count of each digit, then the place of
                                          its first element of the digit (at most a tile) */
    unsigned char d[IDX ? 1 : TILE];   /* a keys-only pass: the ranked tile's digits */
    fcs_u32 delta[256];                /* a pass: ranked element j of digit d goes to
                                          j + delta[d] */
    fcs_u32 wsum[FCS_WARPS];
    fcs_u32 tile;                      /* a pass: the tile this block took */
};

#if FCS_KIND == 2
static __device__ __forceinline__ bool fcs_isnan(fcs_word u) {
    return (fcs_word)(u & (fcs_word)~FCS_SIGN) > (fcs_word)FCS_EXP;
}
#endif

/* The order-preserving unsigned image of a word. */
static __device__ __forceinline__ fcs_word fcs_key(fcs_word u) {
#if FCS_KIND == 0
    return u;
#elif FCS_KIND == 1
    return (fcs_word)(u ^ FCS_SIGN);
#else
    /* selects, not branches: this runs for every element at every pass */
    fcs_word k = (u & FCS_SIGN) ? (fcs_word)~u : (fcs_word)(u | FCS_SIGN);
    k = (fcs_word)(u << 1) == 0 ? FCS_SIGN : k;         /* -0.0 sorts as 0.0 */
    return fcs_isnan(u) ? (fcs_word)~(fcs_word)0 : k; /* every NaN last */
#endif
}

/* The digit of an element (ROWS: part may be 3, the row of its index ix). */
template <bool ROWS = false>
static __device__ __forceinline__ fcs_u32 fcs_digit(const fcs_elem &e, fcs_u32 ix, int part,
                                                    int shift, fcs_u32 row_len) {
    if (ROWS && part == 3) return (ix / row_len >> shift) & 255u;
#if FCS_NWORDS == 2
    const bool nr = fcs_isnan(e.w[0]), ni = fcs_isnan(e.w[1]);
    fcs_word v;
    if (part == 2) v = (fcs_word)((nr ? 2u : 0u) | (ni ? 1u : 0u));
    else if (part == 0) v = nr ? (fcs_word)0 : fcs_key(e.w[0]);
    else v = ni ? (fcs_word)0 : fcs_key(e.w[1]);
#else
    const fcs_word v = fcs_key(e.w[0]);
#endif
    return (fcs_u32)(v >> shift) & 255u;
}

/* Key pass p's part and shift (see FCS_KPASSES). */
static __device__ __forceinline__ int fcs_pass_part(int p) {
#if FCS_NWORDS == 2
    return p < FCS_BITS / 8 ? 1 : p < 2 * (FCS_BITS / 8) ? 0 : 2;
#else
    (void)p;
    return 0;
#endif
}
static __device__ __forceinline__ int fcs_pass_shift(int p) { return 8 * (p % (FCS_BITS / 8)); }

/* Where element r of this thread sits in a tile of N elements a thread (warps hold runs of
 * 32 * N). */
template <int N> static __device__ __forceinline__ int fcs_slot(int r) {
    return (threadIdx.x >> 5) * (32 * N) + r * 32 + (threadIdx.x & 31);
}

/* The exclusive prefix sum of v over the block's threads, in thread order (two barriers;
 * wsum is scratch). */
static __device__ __forceinline__ fcs_u32 fcs_block_scan(fcs_u32 *wsum, fcs_u32 v) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    fcs_u32 x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        fcs_u32 y = __shfl_up_sync(FCS_ALL, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) wsum[w] = x;
    __syncthreads();
    fcs_u32 before = 0;
    for (int q = 0; q < w; q++) before += wsum[q];
    __syncthreads();
    return before + x - v;
}

/* Ranks this warp's elements within the warp, stably. rk[r] holds element r's digit << 16
 * (256 << 16 for no element); on return its low 16 bits count the warp's earlier elements of
 * the digit, and cnt[d] (0 on entry) counts the warp's elements of digit d. Per round the lanes
 * holding one digit find each other by each setting its bit in the warp's word for the digit
 * (match, 0 on entry and on return) and reading the word back; the highest of them advances
 * the digit's count and clears the word. */
template <int N>
static __device__ __forceinline__ void fcs_warp_rank(unsigned short *cnt, fcs_u32 *match,
                                                     fcs_u32 (&rk)[N]) {
    const fcs_u32 lane = threadIdx.x & 31, below = (1u << lane) - 1u;
#pragma unroll
    for (int r = 0; r < N; r++) {
        const fcs_u32 d = rk[r] >> 16;
        if (d < 256u) atomicOr(&match[d], 1u << lane);
        __syncwarp();
        const fcs_u32 peers = d < 256u ? match[d] : 1u << lane;
        __syncwarp(); /* every peer has read the word before it is cleared */
        const fcs_u32 leader = 31 - __clz(peers);
        fcs_u32 before = 0;
        if (lane == leader && d < 256u) {
            before = cnt[d];
            cnt[d] = (unsigned short)(before + __popc(peers));
            match[d] = 0;
        }
        __syncwarp(); /* the count and the cleared word, before the next round */
        rk[r] += __shfl_sync(FCS_ALL, before, leader) + __popc(peers & below);
    }
}

/* After every warp's fcs_warp_rank and a barrier: thread t's digit's count in the tile;
 * the warps' counts of it become the counts before each warp. */
template <class S> static __device__ __forceinline__ fcs_u32 fcs_tile_count(S &s) {
    const int t = threadIdx.x;
    fcs_u32 c = 0;
#pragma unroll
    for (int q = 0; q < FCS_WARPS; q++) {
        fcs_u32 h = s.wh[q][t];
        s.wh[q][t] = (unsigned short)c;
        c += h;
    }
    return c;
}

/* Then, given where the digit's run starts in the ranked tile: where each warp's first
 * element of the digit goes. */
template <class S> static __device__ __forceinline__ void fcs_tile_place(S &s, fcs_u32 start) {
    const int t = threadIdx.x;
#pragma unroll
    for (int q = 0; q < FCS_WARPS; q++) s.wh[q][t] = (unsigned short)(s.wh[q][t] + start);
}

/* An element's place in the ranked tile, from its fcs_warp_rank result. */
static __device__ __forceinline__ fcs_u32 fcs_place(const unsigned short *first, fcs_u32 rk) {
    return (rk & 0xffffu) + first[rk >> 16];
}

/* This warp's counts and match words to 0 (a warp ranks with its own alone). */
template <class S> static __device__ __forceinline__ void fcs_clear_warp(S &s) {
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int q = 0; q < 256; q += 32) {
        s.wh[w][q + lane] = 0;
        s.u.match[w][q + lane] = 0;
    }
}

/* ---- one block a row ---------------------------------------------------------------------- */

/* Rows of at most a tile: block b sorts rows b, b + gridDim.x, ... through shared memory,
 * every pass, and writes the sorted elements (kout) or their int64 positions (iout). */
extern "C" __global__ void __launch_bounds__(FCS_THREADS, 3)
fcs_rows(const fcs_elem *__restrict__ kin, fcs_elem *__restrict__ kout,
         long long *__restrict__ iout, fcs_u64 rows, int row_len) {
    __shared__ fcs_shared<FCS_TILE, true> s;
    const int w = threadIdx.x >> 5;
    fcs_clear_warp(s);
    __syncwarp();
    for (fcs_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const fcs_elem *src = kin + row * (fcs_u64)row_len;
        fcs_elem k[FCS_ITEMS];
        fcs_u32 ix[FCS_ITEMS];
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++) {
            int j = fcs_slot<FCS_ITEMS>(r);
            if (j < row_len) k[r] = src[j];
            ix[r] = (fcs_u32)j;
        }
        /* the passes: for complex the imaginary words, the real words, then the class */
        const int parts = FCS_NWORDS == 2 ? 3 : 1;
        for (int p = 0; p < parts; p++) {
            int part = FCS_NWORDS == 2 ? (p == 0 ? 1 : p == 1 ? 0 : 2) : 0;
            int bits = part == 2 ? 8 : FCS_BITS;
            for (int shift = 0; shift < bits; shift += 8) {
                fcs_u32 rk[FCS_ITEMS];
#pragma unroll
                for (int r = 0; r < FCS_ITEMS; r++)
                    rk[r] = (fcs_slot<FCS_ITEMS>(r) < row_len
                                 ? fcs_digit(k[r], 0u, part, shift, 1u) : 256u) << 16;
                fcs_warp_rank(s.wh[w], s.u.match[w], rk);
                __syncthreads();
                fcs_tile_place(s, fcs_block_scan(s.wsum, fcs_tile_count(s)));
                __syncthreads();
#pragma unroll
                for (int r = 0; r < FCS_ITEMS; r++)
                    if (fcs_slot<FCS_ITEMS>(r) < row_len) {
                        fcs_u32 at = fcs_place(s.wh[w], rk[r]);
                        s.u.t.k[at] = k[r];
                        s.u.t.i[at] = ix[r];
                    }
                __syncthreads();
#pragma unroll
                for (int r = 0; r < FCS_ITEMS; r++) {
                    int j = fcs_slot<FCS_ITEMS>(r);
                    if (j < row_len) {
                        k[r] = s.u.t.k[j];
                        ix[r] = s.u.t.i[j];
                    }
                }
                __syncthreads(); /* every read of the tile before the match words clear it */
                fcs_clear_warp(s);
                __syncwarp();
            }
        }
#pragma unroll
        for (int r = 0; r < FCS_ITEMS; r++) {
            int j = fcs_slot<FCS_ITEMS>(r);
            if (j < row_len) {
                if (kout) kout[row * (fcs_u64)row_len + j] = k[r];
                else iout[row * (fcs_u64)row_len + j] = (long long)ix[r];
            }
        }
    }
}

/* ---- passes over the whole array ---------------------------------------------------------- */

/* Counters zeroed before the histogram (its totals, the passes' ticket counters). */
extern "C" __global__ void fcs_zero(fcs_u32 *__restrict__ p, fcs_u32 words) {
    const fcs_u32 step = gridDim.x * blockDim.x;
    for (fcs_u32 j = blockIdx.x * blockDim.x + threadIdx.x; j < words; j += step) p[j] = 0;
}

/* Copies of the histogram's counters, side by side: lane l counts into copy l % FCS_HPARTS, so
 * two lanes share a bank only when their copies agree and their digits agree in the low bits
 * (one table: whenever the digits agree modulo 32), which spreads a warp's shared atomics over
 * the banks. As many copies as 32 KiB of counters hold. */
#define FCS_HPARTS (FCS_KPASSES <= 4 ? 8 : FCS_KPASSES <= 8 ? 4 : FCS_KPASSES <= 16 ? 2 : 1)

/* Counts the digits of the tile of elements [at, at + FCS_TILE) that lie below hi (FULL: all
 * of them, so no element needs a test). */
template <bool FULL>
static __device__ __forceinline__ void fcs_hist_tile(fcs_u32 *h,
                                                     const fcs_elem *__restrict__ keys,
                                                     fcs_u64 at, fcs_u64 hi) {
    const int t = threadIdx.x;
    fcs_elem k[FCS_ITEMS];
#pragma unroll
    for (int r = 0; r < FCS_ITEMS; r++) { /* every load of the tile first */
        fcs_u64 j = at + (fcs_u64)(r * FCS_THREADS + t);
        if (FULL || j < hi) k[r] = keys[j];
    }
#pragma unroll
    for (int r = 0; r < FCS_ITEMS; r++)
        if (FULL || at + (fcs_u64)(r * FCS_THREADS + t) < hi) {
#pragma unroll
            for (int p = 0; p < FCS_KPASSES; p++) {
                fcs_u32 d = fcs_digit(k[r], 0u, fcs_pass_part(p), fcs_pass_shift(p), 1u);
                atomicAdd(&h[(p * 256 + d) * FCS_HPARTS], 1u);
            }
        }
}

/* Step 1: the digit counts of every key pass in one read of the keys. Block b counts
 * elements [b * chunk, (b + 1) * chunk) in shared memory and adds its counts to totals[p][d]
 * (zeroed by fcs_zero). The blocks also zero `zero` (the first pass's look-back words). */
extern "C" __global__ void __launch_bounds__(FCS_THREADS)
fcs_hist(const fcs_elem *__restrict__ keys, fcs_u64 n, fcs_u64 chunk,
         fcs_u32 *__restrict__ totals, fcs_u32 *__restrict__ zero, fcs_u64 zero_words) {
    __shared__ fcs_u32 h[FCS_KPASSES * 256 * FCS_HPARTS];
    const int t = threadIdx.x;
    for (int j = t; j < FCS_KPASSES * 256 * FCS_HPARTS; j += FCS_THREADS) h[j] = 0;
    for (fcs_u64 j = (fcs_u64)blockIdx.x * FCS_THREADS + t; j < zero_words;
         j += (fcs_u64)gridDim.x * FCS_THREADS)
        zero[j] = 0;
    __syncthreads();
    fcs_u64 at = (fcs_u64)blockIdx.x * chunk, hi = at + chunk < n ? at + chunk : n;
    fcs_u32 *copy = h + t % FCS_HPARTS;
    for (; at + FCS_TILE <= hi; at += FCS_TILE) fcs_hist_tile<true>(copy, keys, at, hi);
    if (at < hi) fcs_hist_tile<false>(copy, keys, at, hi);
    __syncthreads();
    for (int j = t; j < FCS_KPASSES * 256; j += FCS_THREADS) {
        fcs_u32 c = 0;
#pragma unroll
        for (int q = 0; q < FCS_HPARTS; q++) c += h[j * FCS_HPARTS + q];
        if (c) atomicAdd(&totals[j], c);
    }
}

/* Step 2: block p turns pass p's digit counts into where each digit starts (bases[p][d]).
 * A key pass's counts are the histogram's; a row pass's are known without one: row_len times
 * the number of rows whose number has digit d. */
extern "C" __global__ void __launch_bounds__(FCS_THREADS)
fcs_scan(const fcs_u32 *__restrict__ totals, fcs_u32 *__restrict__ bases, fcs_u64 rows,
         fcs_u32 row_len) {
    __shared__ fcs_u32 wsum[FCS_WARPS];
    const int p = blockIdx.x;
    const fcs_u32 d = threadIdx.x;
    fcs_u32 c;
    if (p < FCS_KPASSES) {
        c = totals[p * 256 + d];
    } else {
        /* rows [0, rows): whole periods of 256 runs of 2^s rows, one run a digit, then a part */
        const int s = 8 * (p - FCS_KPASSES);
        const fcs_u64 run = 1ull << s, period = run << 8, first = (fcs_u64)d << s;
        const fcs_u64 rest = rows % period, tail = rest > first ? rest - first : 0;
        c = (fcs_u32)((rows / period * run + (tail < run ? tail : run)) * row_len);
    }
    bases[p * 256 + d] = fcs_block_scan(wsum, c);
}

/* Step 3, one launch a pass (and portion): each block takes the next tile from *ticket, so a
 * tile's block only ever waits on blocks that took their tiles before it and are running.
 * The launch covers input elements [lo, lo + n), with n < 2^30, so that a count of the
 * look-back fits in its word: status[tile][d] is 0 until the tile's block publishes
 * FCS_AGG | (the tile's count of digit d), then FCS_INC | (the count in this and every earlier
 * tile of the launch), flag and count in one word so that no fence orders them. Thread d
 * walks back from the tile before, adding counts, until it meets an inclusive one. The place
 * of an element is bases[d] (its digit's start, with the earlier launches' elements of the
 * digit) plus the look-back's count plus its place among the tile's elements of the digit.
 *
 * Outputs: kout the elements (0: not written; a row pass then does not read them), iout their
 * indices (IDX; 0: not written), pout their int64 positions in their rows (IDX; argsort's last
 * pass). The block of the last tile writes bases_next (the next launch's bases; 0: none); every
 * block zeroes its tile's words of status_next (the next pass's; 0: none). */
#define FCS_AGG 0x40000000u
#define FCS_INC 0x80000000u
#define FCS_COUNT 0x3fffffffu

#define FCS_PASS_PARAMS                                                                       \
    const fcs_elem *__restrict__ kin, const fcs_u32 *__restrict__ iin,                        \
        fcs_elem *__restrict__ kout, fcs_u32 *__restrict__ iout, long long *__restrict__ pout, \
        fcs_u32 lo, fcs_u32 n, fcs_u32 row_len, int part, int shift,                           \
        const fcs_u32 *__restrict__ bases, fcs_u32 *__restrict__ bases_next,                   \
        fcs_u32 *__restrict__ ticket, fcs_u32 *status, fcs_u32 *__restrict__ status_next
#define FCS_PASS_ARGS                                                                          \
    kin, iin, kout, iout, pout, lo, n, row_len, part, shift, bases, bases_next, ticket, status, \
        status_next

template <bool IDX, int N = IDX ? FCS_PITEMS_IDX : FCS_PITEMS>
static __device__ __forceinline__ void fcs_pass_tile(fcs_shared<FCS_THREADS * N, IDX> &s,
                                                     FCS_PASS_PARAMS) {
    constexpr int TILE = FCS_THREADS * N;
    const int t = threadIdx.x, w = t >> 5;
    fcs_clear_warp(s);
    if (t == 0) s.tile = atomicAdd(ticket, 1u);
    __syncthreads();
    const fcs_u32 tile = s.tile, at = tile * TILE;
    if (status_next) status_next[tile * 256 + t] = 0;
    const int m = n - at < (fcs_u32)TILE ? (int)(n - at) : TILE;
    /* a keys-only pass always moves and writes the keys (never a row pass) */
    const bool keys_move = !IDX || part != 3 || kout;
    fcs_elem k[N];
    fcs_u32 ix[IDX ? N : 1], rk[N];
#pragma unroll
    for (int r = 0; r < N; r++) { /* every load of the tile first */
        int j = fcs_slot<N>(r);
        fcs_u32 g = lo + at + (fcs_u32)j;
        if (j < m) {
            if (keys_move) k[r] = kin[g];
            if (IDX) ix[r] = iin ? iin[g] : g;
        }
    }
#pragma unroll
    for (int r = 0; r < N; r++)
        rk[r] = (fcs_slot<N>(r) < m
                     ? fcs_digit<IDX>(k[r], IDX ? ix[r] : 0u, part, shift, row_len) : 256u)
                << 16;
    fcs_warp_rank(s.wh[w], s.u.match[w], rk);
    __syncthreads();

    /* thread t: digit t's count in the tile, published before anything else so that later
     * tiles' look-backs wait as little as possible */
    const fcs_u32 c = fcs_tile_count(s);
    volatile fcs_u32 *mine = status + tile * 256 + t;
    *mine = (tile ? FCS_AGG : FCS_INC) | c;
    const fcs_u32 start = fcs_block_scan(s.wsum, c);
    fcs_tile_place(s, start);
    fcs_u32 before = 0;
    if (tile) {
        for (fcs_u32 prev = tile - 1;;) {
            fcs_u32 v = ((volatile fcs_u32 *)status)[prev * 256 + t];
            if (!(v & (FCS_AGG | FCS_INC))) continue; /* not published yet */
            before += v & FCS_COUNT;
            if (v & FCS_INC) break;
            prev--;
        }
        *mine = FCS_INC | (before + c);
    }
    const fcs_u32 first = bases[t] + before; /* where the tile's first element of digit t goes */
    if (bases_next && at + (fcs_u32)m == n) bases_next[t] = first + c;
    s.delta[t] = first - start;
    __syncthreads();

#pragma unroll
    for (int r = 0; r < N; r++)
        if (fcs_slot<N>(r) < m) {
            fcs_u32 p = fcs_place(s.wh[w], rk[r]);
            if (keys_move) s.u.t.k[p] = k[r];
            if (IDX) s.u.t.i[p] = ix[r];
            else s.d[p] = (unsigned char)(rk[r] >> 16);
        }
    __syncthreads();
    /* the ranked tile out: consecutive threads write consecutive places of a digit's run */
#pragma unroll
    for (int r = 0; r < N; r++) {
        const int j = r * FCS_THREADS + t;
        if (j < m) {
            fcs_elem e = {};
            if (keys_move) e = s.u.t.k[j];
            const fcs_u32 x = IDX ? s.u.t.i[j] : 0u;
            const fcs_u32 d = IDX ? fcs_digit<IDX>(e, x, part, shift, row_len) : s.d[j];
            const fcs_u64 g = s.delta[d] + (fcs_u32)j;
            if (!IDX || kout) kout[g] = e;
            if (IDX && iout) iout[g] = x;
            if (IDX && pout) pout[g] = (long long)(x < row_len ? x : x % row_len);
        }
    }
}

extern "C" __global__ void __launch_bounds__(FCS_THREADS, 4) fcs_pass(FCS_PASS_PARAMS) {
    __shared__ fcs_shared<FCS_THREADS * FCS_PITEMS, false> s;
    fcs_pass_tile<false>(s, FCS_PASS_ARGS);
}

extern "C" __global__ void __launch_bounds__(FCS_THREADS, 3) fcs_pass_idx(FCS_PASS_PARAMS) {
    __shared__ fcs_shared<FCS_THREADS * FCS_PITEMS_IDX, true> s;
    fcs_pass_tile<true>(s, FCS_PASS_ARGS);
}
