/* SPDX-License-Identifier: MIT */
/* hpm: the TLB model (geometry from CPUID or a preset; a set-associative
   LRU simulation of an L1 dTLB per page size and a shared L2 TLB), and
   the test commands `hpm __tlbdecode` and `hpm __tlbsim`.  What a TLB miss
   costs is measured by `hpm tlbcost` (tlbcost.c).  MIT licence.  */
#include "args.h"
#include "hpm.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Published figures, rounded; walk_cycles are typical page-walk latencies
   when the page-table entries hit in the data caches.  The last two levels
   are the 1 GiB L1 dTLB and L2 (0 = none, see hpm.h):
   - skylake: Skylake client (Intel optimization manual): L1 dTLB 4 x 1G,
     4-way; STLB 16 x 1G, 4-way, apart from the 4K/2M entries.
   - golden-cove: approximate (Alder Lake P-core figures as published):
     L1 dTLB 8 x 1G fully associative; STLB 1024 x 1G, 8-way.
   - zen3, zen4: L1 dTLB fully associative for all sizes, 1G included
     (64 / 72 entries).  Their L2 DTLB keeps 1G translations in its shared
     4K/2M entries (zen3: smashed to 2M; approximate for zen4), modelled as
     2M splinters in the shared l2 (l2_1g none); `--tlb cpuid` takes the
     CPU's own 0x80000019 figures instead.
   - power9: no 1G levels; POWER9's 1G radix pages go through the 2M
     structures like its 16 MiB hash pages (the preset's figures are for
     its ERAT/TLB in general, without per-size 1G data).  */
static const struct tlb_geom presets[] = {
  { "skylake", { 64, 4 }, { 32, 4 }, { 1536, 12 }, 9, 30, { 4, 4 }, { 16, 4 } },
  { "golden-cove", { 96, 6 }, { 32, 4 }, { 2048, 16 }, 8, 30, { 8, 8 }, { 1024, 8 } },
  { "zen3", { 64, 64 }, { 64, 64 }, { 2048, 16 }, 7, 35, { 64, 64 }, { 0, 0 } },
  { "zen4", { 72, 72 }, { 72, 72 }, { 3072, 24 }, 7, 35, { 72, 72 }, { 0, 0 } },
  { "power9-radix", { 64, 64 }, { 64, 64 }, { 1024, 4 }, 10, 60, { 0, 0 }, { 0, 0 } },
  { "power9-hash", { 64, 64 }, { 64, 64 }, { 1024, 4 }, 10, 120, { 0, 0 }, { 0, 0 } },
};

void tlb_geom_list(FILE *f) {
  for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
    const struct tlb_geom *g = &presets[i];
    fprintf(f, "  %-13s L1 4K %u/%u-way, L1 2M %u/%u-way, L2 %u/%u-way, L2 hit %u cycles, walk %u cycles\n", g->name,
            g->l1_4k.entries, g->l1_4k.ways, g->l1_2m.entries, g->l1_2m.ways, g->l2.entries, g->l2.ways,
            g->l2_hit_cycles, g->walk_cycles);
    fprintf(f, "  %-13s L1 1G %u/%u-way, L2 1G %u/%u-way%s\n", "", g->l1_1g.entries, g->l1_1g.ways, g->l2_1g.entries,
            g->l2_1g.ways,
            !g->l1_1g.entries   ? " (1G as 2M)"
            : !g->l2_1g.entries ? " (L2: 1G as 2M in the shared L2)"
                                : "");
  }
}

static unsigned amd_l2_assoc(unsigned code, unsigned entries) {
  static const unsigned tab[16] = { 0, 1, 2, 3, 4, 0, 8, 0, 16, 0, 32, 48, 64, 96, 128, 0 };
  if (code == 0xF) return entries; /* fully associative */
  return tab[code & 0xF];
}

/* Decode the TLB leaves.  CPUID(leaf, subleaf, regs) returns 0 if the leaf
   is not available; it is the instruction on x86, a table in tests.  */
typedef int (*cpuid_fn)(unsigned leaf, unsigned sub, unsigned r[4], void *ctx);
static int valid_level(const struct tlb_level *l);

static int tlb_decode(cpuid_fn cpuid, void *ctx, struct tlb_geom *g) {
  unsigned r[4], max;
  char vendor[13];
  if (!cpuid(0, 0, r, ctx)) return -1;
  max = r[0];
  memcpy(vendor, &r[1], 4);
  memcpy(vendor + 4, &r[3], 4);
  memcpy(vendor + 8, &r[2], 4);
  vendor[12] = 0;
  memset(g, 0, sizeof *g);
  g->l2_hit_cycles = 8;
  g->walk_cycles = 30;
  if (!strcmp(vendor, "GenuineIntel") && max >= 0x18) {
    if (!cpuid(0x18, 0, r, ctx)) return -1;
    unsigned nsub = r[0];
    for (unsigned s = 0; s <= nsub && s < 64; s++) {
      if (!cpuid(0x18, s, r, ctx)) break;
      unsigned b = r[1], c = r[2], d = r[3];
      unsigned type = d & 0x1F, level = (d >> 5) & 7;
      if (type == 0 || type == 2 || type == 5) continue; /* invalid, instruction, store-only */
      unsigned ways = b >> 16, sets = c;
      if (d & 0x100) {
        ways = ways * sets;
        sets = 1;
      } /* fully associative */
      unsigned entries = ways * sets;
      if (!entries) continue;
      /* EBX page sizes: bit 0 4K, 1 2M, 2 4M, 3 1G.  */
      if (level == 1) {
        if ((b & 1) && entries > g->l1_4k.entries) g->l1_4k = (struct tlb_level){ entries, ways };
        if ((b & 2) && entries > g->l1_2m.entries) g->l1_2m = (struct tlb_level){ entries, ways };
        if ((b & 8) && entries > g->l1_1g.entries) g->l1_1g = (struct tlb_level){ entries, ways };
      } else if (level == 2) {
        if ((b & 1) && entries > g->l2.entries) g->l2 = (struct tlb_level){ entries, ways };
        if ((b & 8) && entries > g->l2_1g.entries) g->l2_1g = (struct tlb_level){ entries, ways };
      }
    }
    (void)snprintf(g->name, sizeof g->name, "cpuid-intel"); /* fits */
  } else if (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine")) {
    if (!cpuid(0x80000000, 0, r, ctx) || r[0] < 0x80000006) return -1;
    unsigned maxext = r[0];
    if (!cpuid(0x80000005, 0, r, ctx)) return -1;
    g->l1_2m = (struct tlb_level){ (r[0] >> 16) & 0xFF, (r[0] >> 24) & 0xFF };
    g->l1_4k = (struct tlb_level){ (r[1] >> 16) & 0xFF, (r[1] >> 24) & 0xFF };
    if (g->l1_2m.ways == 0xFF) g->l1_2m.ways = g->l1_2m.entries;
    if (g->l1_4k.ways == 0xFF) g->l1_4k.ways = g->l1_4k.entries;
    if (!cpuid(0x80000006, 0, r, ctx)) return -1;
    unsigned e4 = (r[1] >> 16) & 0xFFF, e2 = (r[0] >> 16) & 0xFFF;
    unsigned code = e4 >= e2 ? r[1] >> 28 : r[0] >> 28, e = e4 >= e2 ? e4 : e2;
    g->l2 = (struct tlb_level){ e, amd_l2_assoc(code, e) };
    /* 0x80000019: EAX 31:28/27:16 L1 dTLB 1G assoc/entries, EBX the same
       for the L2 dTLB (the L2-style associativity code for both).  */
    if (maxext >= 0x80000019 && cpuid(0x80000019, 0, r, ctx)) {
      unsigned e1 = (r[0] >> 16) & 0xFFF, e2g = (r[1] >> 16) & 0xFFF;
      g->l1_1g = (struct tlb_level){ e1, amd_l2_assoc(r[0] >> 28, e1) };
      g->l2_1g = (struct tlb_level){ e2g, amd_l2_assoc(r[1] >> 28, e2g) };
    }
    g->l2_hit_cycles = 7;
    g->walk_cycles = 35;
    (void)snprintf(g->name, sizeof g->name, "cpuid-amd"); /* fits */
  } else
    return -1;
  if (!g->l1_4k.entries || !g->l2.entries || !g->l1_4k.ways || !g->l2.ways) return -1;
  if (!g->l1_2m.entries || !g->l1_2m.ways) g->l1_2m = (struct tlb_level){ 32, 4 };
  /* A 1G level the model cannot take (say 48 entries, 32-way) is dropped,
     not the whole geometry: 1G pages then take the 2M path.  */
  if (!valid_level(&g->l1_1g)) g->l1_1g = (struct tlb_level){ 0, 0 };
  if (!valid_level(&g->l2_1g)) g->l2_1g = (struct tlb_level){ 0, 0 };
  return 0;
}

#if defined(__x86_64__) || defined(__i386__)
static int cpuid_insn(unsigned leaf, unsigned sub, unsigned r[4], void *ctx) {
  (void)ctx;
  unsigned top = __get_cpuid_max(leaf & 0x80000000u, NULL);
  if (top < leaf) return 0;
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
  return 1;
}
static int tlb_from_cpuid(struct tlb_geom *g) { return tlb_decode(cpuid_insn, NULL, g); }
#else
static int tlb_from_cpuid(struct tlb_geom *g) {
  (void)g;
  return -1;
}
#endif

/* Tests: `hpm __tlbdecode FILE`, FILE holding lines "leaf subleaf eax ebx ecx edx" (hex).  */
struct cpuid_table {
  unsigned n;
  unsigned v[64][6];
};

static int cpuid_from_table(unsigned leaf, unsigned sub, unsigned r[4], void *ctx) {
  const struct cpuid_table *t = ctx;
  for (unsigned i = 0; i < t->n; i++)
    if (t->v[i][0] == leaf && t->v[i][1] == sub) {
      memcpy(r, &t->v[i][2], 4 * sizeof *r);
      return 1;
    }
  if (leaf == 0x18 || leaf == 0x80000005 || leaf == 0x80000006 || leaf == 0x80000019) {
    memset(r, 0, 4 * sizeof *r);
    return 1;
  }
  return 0;
}

/* N hexadecimal numbers (at most 32 bits each) separated by blanks, then
   nothing but blanks: 0, else -1.  */
static int hex_fields(const char *s, unsigned *v, int n) {
  for (int k = 0; k < n; k++) {
    char *end;
    while (*s == ' ' || *s == '\t') s++;
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F'))) return -1;
    errno = 0;
    unsigned long x = strtoul(s, &end, 16);
    if (errno || x > UINT_MAX) return -1;
    v[k] = (unsigned)x;
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return *s ? -1 : 0;
}

struct tlbtest_opts {
  const char *file; /* __tlbdecode */
  struct tlb_geom geom;
  int page, npages, rounds;
};

static const struct arg_opt tlbdecode_args[] = {
  { .name = "FILE",
    .kind = ARG_STR,
    .off = offsetof(struct tlbtest_opts, file),
    .required = 1,
    .doc = "lines \"leaf subleaf eax ebx ecx edx\" in hexadecimal" },
  { 0 },
};

static const struct arg_cmd tlbdecode_cmd = {
  .name = "__tlbdecode",
  .synopsis = "usage: hpm __tlbdecode FILE\n",
  .help = "Tests: the TLB geometry decoded from a dump of CPUID leaves.\n",
  .args = tlbdecode_args,
};

int cmd_tlbdecode(int argc, char **argv) {
  static struct cpuid_table t;
  struct tlbtest_opts o = { 0 };
  int rc = args_parse(&tlbdecode_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  FILE *f = fopen(o.file, "r");
  if (!f) {
    fprintf(stderr, "hpm: %s: %s\n", o.file, strerror(errno));
    return 1;
  }
  char line[256];
  while (t.n < 64 && fgets(line, sizeof line, f) && hex_fields(line, t.v[t.n], 6) == 0) t.n++;
  (void)fclose(f); /* opened for reading: nothing to lose */
  struct tlb_geom g;
  if (tlb_decode(cpuid_from_table, &t, &g)) {
    fprintf(stderr, "hpm: no TLB geometry in %s\n", o.file);
    return 1;
  }
  printf("%s l1_4k=%u/%u l1_2m=%u/%u l2=%u/%u l1_1g=%u/%u l2_1g=%u/%u\n", g.name, g.l1_4k.entries, g.l1_4k.ways,
         g.l1_2m.entries, g.l1_2m.ways, g.l2.entries, g.l2.ways, g.l1_1g.entries, g.l1_1g.ways, g.l2_1g.entries,
         g.l2_1g.ways);
  return 0;
}

int tlb_geom_arg(void *field, const char *val, char *err, size_t errlen) {
  return tlb_geom_get(val, field, err, errlen);
}

static int set_page(void *field, const char *val, char *err, size_t errlen) {
  unsigned long long v;
  if (parse_uint(val, 0, 40, &v) || (v > 2 && v < 12)) {
    (void)snprintf(err, errlen, "expected 0 (4 KiB), 1 (2 MiB), 2 (1 GiB) or a page shift from 12 to 40"); /* fits */
    return -1;
  }
  *(int *)field = (int)v;
  return 0;
}

static const struct arg_opt tlbsim_args[] = {
  { .name = "SPEC", .kind = ARG_FN, .off = offsetof(struct tlbtest_opts, geom), .set = tlb_geom_arg, .required = 1 },
  { .name = "PAGE", .kind = ARG_FN, .off = offsetof(struct tlbtest_opts, page), .set = set_page, .required = 1 },
  { .name = "NPAGES",
    .kind = ARG_INT,
    .off = offsetof(struct tlbtest_opts, npages),
    .min = 1,
    .max = 1u << 20,
    .required = 1 },
  { .name = "ROUNDS",
    .kind = ARG_INT,
    .off = offsetof(struct tlbtest_opts, rounds),
    .min = 1,
    .max = 1000,
    .required = 1 },
  { 0 },
};

static const struct arg_cmd tlbsim_cmd = {
  .name = "__tlbsim",
  .synopsis = "usage: hpm __tlbsim SPEC PAGE NPAGES ROUNDS\n",
  .help = "Tests: touches NPAGES pages of size PAGE (0 4K, 1 2M, 2 1G, or a shift) in\n"
          "order, ROUNDS times, through the model of SPEC (as --tlb) and prints\n"
          "\"accesses=A l1_misses=M walks=W\".\n",
  .args = tlbsim_args,
};

int cmd_tlbsim(int argc, char **argv) {
  struct tlbtest_opts o = { 0 };
  int rc = args_parse(&tlbsim_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  struct tlb_sim *s = tlb_sim_new(&o.geom);
  if (!s) {
    fprintf(stderr, "hpm: out of memory\n");
    return 1;
  }
  unsigned shift = o.page >= 12 ? (unsigned)o.page : o.page == 2 ? 30 : o.page == 1 ? 21 : 12;
  for (int r = 0; r < o.rounds; r++)
    for (uint64_t i = 0; i < (uint64_t)o.npages; i++) tlb_sim_access(s, (1ull << 40) + (i << shift), o.page);
  uint64_t acc, l1m, walks;
  tlb_sim_counts(s, &acc, &l1m, &walks);
  tlb_sim_free(s);
  printf("accesses=%llu l1_misses=%llu walks=%llu\n", (unsigned long long)acc, (unsigned long long)l1m,
         (unsigned long long)walks);
  return 0;
}

static int valid_level(const struct tlb_level *l) {
  return l->entries && l->ways && l->ways <= l->entries && l->entries % l->ways == 0 && l->entries <= (1u << 20);
}

/* A 1G level: valid, or none (0 entries).  */
static int valid_opt_level(const struct tlb_level *l) { return l->entries == 0 || valid_level(l); }

static int valid_geom(const struct tlb_geom *g) {
  return valid_level(&g->l1_4k) && valid_level(&g->l2) && valid_level(&g->l1_2m) && valid_opt_level(&g->l1_1g) &&
         valid_opt_level(&g->l2_1g);
}

/* A decimal number in [0, UINT_MAX] at S (digits only): 0, else -1.
   *END: after it.  */
static int spec_uint(const char *s, unsigned *v, char **end) {
  if (*s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long x = strtoul(s, end, 10);
  if (errno || x > UINT_MAX) return -1;
  *v = (unsigned)x;
  return 0;
}

/* TOK is "KEY=X", or "KEY=X/Y" when Y is given: returns how many numbers
   it holds (1 or 2), 0 if TOK is about another key, -1 if it is junk.  */
static int spec_item(const char *tok, const char *key, unsigned *x, unsigned *y) {
  size_t l = strlen(key);
  char *end;
  if (strncmp(tok, key, l) != 0 || tok[l] != '=') return 0;
  if (spec_uint(tok + l + 1, x, &end)) return -1;
  if (!y) return *end ? -1 : 1;
  if (*end != '/' || spec_uint(end + 1, y, &end) || *end) return -1;
  return 2;
}

/* SPEC: a preset name, "cpuid", "auto" (cpuid, else skylake), or
   "custom:l1=64/4,l1h=32/4,l2=1536/12,hit=9,walk=30[,l1g=4/4,l2g=16/4]"
   (l1g/l2g: the 1 GiB levels, 0/0 for none; default the skylake preset's).  */
int tlb_geom_get(const char *spec, struct tlb_geom *g, char *err, size_t errlen) {
  if (!spec || !strcmp(spec, "auto")) {
    if (tlb_from_cpuid(g) == 0 && valid_geom(g)) return 0;
    *g = presets[0];
    return 0;
  }
  if (!strcmp(spec, "cpuid")) {
    if (tlb_from_cpuid(g) == 0 && valid_geom(g)) return 0;
    (void)snprintf(err, errlen,
                   "this CPU does not report its TLB geometry (CPUID 0x18 or 0x80000005/6/19); use a preset");
    return -1;
  }
  for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
    if (!strcmp(spec, presets[i].name)) {
      *g = presets[i];
      return 0;
    }
  if (!strncmp(spec, "custom:", 7)) {
    *g = presets[0];
    (void)snprintf(g->name, sizeof g->name, "custom"); /* fits */
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s", spec + 7);
    if (n < 0 || (size_t)n >= sizeof buf) {
      (void)snprintf(err, errlen, "TLB spec too long"); /* a message: truncation is harmless */
      return -1;
    }
    /* Messages below: truncation is harmless.  */
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
      unsigned x, y;
      if (spec_item(tok, "l1", &x, &y) == 2)
        g->l1_4k = (struct tlb_level){ x, y };
      else if (spec_item(tok, "l1h", &x, &y) == 2)
        g->l1_2m = (struct tlb_level){ x, y };
      else if (spec_item(tok, "l2", &x, &y) == 2)
        g->l2 = (struct tlb_level){ x, y };
      else if (spec_item(tok, "l1g", &x, &y) == 2)
        g->l1_1g = (struct tlb_level){ x, y };
      else if (spec_item(tok, "l2g", &x, &y) == 2)
        g->l2_1g = (struct tlb_level){ x, y };
      else if (spec_item(tok, "hit", &x, NULL) == 1)
        g->l2_hit_cycles = x;
      else if (spec_item(tok, "walk", &x, NULL) == 1)
        g->walk_cycles = x;
      else {
        (void)snprintf(err, errlen, "bad TLB spec item '%s'", tok);
        return -1;
      }
    }
    if (!valid_geom(g)) {
      (void)snprintf(err, errlen,
                     "TLB levels need entries divisible by ways (at most 2^20 entries; l1g/l2g may be 0/0)");
      return -1;
    }
    return 0;
  }
  (void)snprintf(
      err, errlen,
      "unknown TLB model '%s' (presets: skylake golden-cove zen3 zen4 power9-radix power9-hash; cpuid; custom:...)",
      spec);
  return -1;
}

/* --- simulation ---------------------------------------------------------------- */
struct tlb_set_arr {
  unsigned sets, ways;
  uint64_t *tag, *age;
};
struct tlb_sim {
  struct tlb_set_arr l1[3], l2, l2g; /* l1[2], l2g: 1 GiB; sets 0 = none */
  uint64_t clock, accesses, l1_misses, walks;
};

static int arr_init(struct tlb_set_arr *a, const struct tlb_level *l) {
  if (!l->entries || !l->ways) {
    a->sets = a->ways = 0;
    return 0;
  } /* none (1G levels) */
  a->ways = l->ways;
  a->sets = l->entries / l->ways;
  a->tag = calloc(l->entries, sizeof *a->tag);
  a->age = calloc(l->entries, sizeof *a->age);
  return a->tag && a->age ? 0 : -1;
}

/* Look KEY (non-zero) up; insert on a miss (LRU).  1 on a hit; a level
   with no entries (callers avoid it) always misses.  */
static int arr_access(struct tlb_set_arr *a, uint64_t key, uint64_t now) {
  if (!a->sets) return 0;
  size_t base = (size_t)((key >> 2) % a->sets) * a->ways, victim = base;
  for (size_t i = base; i < base + a->ways; i++) {
    if (a->tag[i] == key) {
      a->age[i] = now;
      return 1;
    }
    if (a->age[i] < a->age[victim]) victim = i;
  }
  a->tag[victim] = key;
  a->age[victim] = now;
  return 0;
}

struct tlb_sim *tlb_sim_new(const struct tlb_geom *g) {
  struct tlb_sim *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  if (arr_init(&s->l1[0], &g->l1_4k) || arr_init(&s->l1[1], &g->l1_2m) || arr_init(&s->l2, &g->l2) ||
      arr_init(&s->l1[2], &g->l1_1g) || arr_init(&s->l2g, &g->l2_1g)) {
    tlb_sim_free(s);
    return NULL;
  }
  return s;
}

/* Keys: (page number << 2 | size class) + 4, never 0; the set index is the
   page number (key >> 2, less one), as it was with 4K/2M only.  */
static uint64_t page_key(uint64_t addr, int cls) {
  static const unsigned shift[3] = { 12, 21, 30 };
  return ((addr >> shift[cls]) << 2 | (uint64_t)cls) + 4;
}

void tlb_sim_access(struct tlb_sim *s, uint64_t addr, int page) {
  int cls = page >= 30 ? 2 : page >= 21 ? 1 : page >= 12 ? 0 : page == 1 || page == 2 ? page : 0;
  /* Without 1G L1 entries a 1G page is modelled with the 2M structures, as
     CPUs without 1G TLB entries splinter it.  */
  if (cls == 2 && !s->l1[2].sets) cls = 1;
  uint64_t key = page_key(addr, cls);
  s->accesses++;
  s->clock++;
  if (arr_access(&s->l1[cls], key, s->clock)) return;
  s->l1_misses++;
  int hit;
  if (cls != 2)
    hit = arr_access(&s->l2, key, s->clock);
  else if (s->l2g.sets)
    hit = arr_access(&s->l2g, key, s->clock);
  else
    hit = arr_access(&s->l2, page_key(addr, 1), s->clock); /* no 1G L2: the 2M splinter in the shared L2 */
  if (!hit) s->walks++;
}

void tlb_sim_counts(const struct tlb_sim *s, uint64_t *acc, uint64_t *l1m, uint64_t *walks) {
  *acc = s->accesses;
  *l1m = s->l1_misses;
  *walks = s->walks;
}

void tlb_sim_free(struct tlb_sim *s) {
  if (!s) return;
  for (int i = 0; i < 3; i++) {
    free(s->l1[i].tag);
    free(s->l1[i].age);
  }
  free(s->l2.tag);
  free(s->l2.age);
  free(s->l2g.tag);
  free(s->l2g.age);
  free(s);
}
