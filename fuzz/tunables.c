/* fuzz/tunables.c: libFuzzer harness for the tunables parser (tunables/).
 *
 * SPDX-License-Identifier: MIT
 *
 * Input: byte 0 holds flags (bit 0: AT_SECURE, bit 1: the first string is
 * the built-in defaults string); the rest is split at NUL bytes into
 * strings: the built-in string (when flagged), then the environment
 * entries.  Every string is copied into an allocation of exactly its size,
 * so AddressSanitizer catches a read past a NUL.
 *
 * Each input is checked against a reference model written independently
 * with libc (strcspn, strtoull), which the library itself may not call:
 * the values and set_mask must match exactly.  Also checked: the input
 * strings are never written; AT_SECURE ignores the environment;
 * hp_tunable_lookup reads a name by its length only (raw, unterminated
 * bytes).  */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunables.h"

#define MAX_ENV 64

/* ---------------------------------------------------------------- reference */

/* _dl_strtoul-like, whole text must be one number (tunables/README.md).  */
static int ref_number(const char *s, size_t len, uint64_t *out) {
  char *buf = malloc(len + 1);
  if (!buf) abort();
  memcpy(buf, s, len);
  buf[len] = '\0';
  int ok = 0;
  size_t i = 0;
  while (buf[i] == ' ' || buf[i] == '\t') i++;
  int neg = 0;
  if (buf[i] == '-' || buf[i] == '+') neg = buf[i++] == '-';
  if (buf[i] >= '0' && buf[i] <= '9') {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf + i, &end, 0);
    if (errno == 0 && *end == '\0') {
      *out = neg ? 0 - (uint64_t)v : (uint64_t)v;
      ok = 1;
    }
  }
  free(buf);
  return ok;
}

static int ref_in_range(int id, uint64_t v) {
  const struct hp_tunable_desc *d = &hp_tunable_table[id];
  if (d->type == HP_TT_INT32) return (int64_t)v >= (int64_t)d->min && (int64_t)v <= (int64_t)d->max;
  return v >= d->min && v <= d->max;
}

static int ref_lookup(const char *name, size_t len) {
  for (int id = 0; id < HP_T_COUNT; id++) {
    const char *full = hp_tunable_table[id].name;
    if (strlen(full) == len && memcmp(full, name, len) == 0) return id;
    if (len > 7 && memcmp(name, "malloc.", 7) == 0 && strncmp(full, "glibc.", 6) == 0 &&
        strlen(full + 6) == len && memcmp(full + 6, name, len) == 0)
      return id;
  }
  return -1;
}

static int ref_set(struct hp_tunable_values *tv, int id, const char *v, size_t len) {
  uint64_t n;
  if (!ref_number(v, len, &n) || !ref_in_range(id, n)) return 0;
  tv->val[id] = n;
  tv->set_mask |= 1u << id;
  return 1;
}

static void ref_apply_string(struct hp_tunable_values *tv, const char *s) {
  if (!s) return;
  for (;;) {
    size_t n = strcspn(s, "=:");
    if (s[n] == '\0') return;
    if (s[n] == ':') {
      s += n + 1;
      continue;
    }
    const char *v = s + n + 1;
    size_t vl = strcspn(v, ":");
    int id = ref_lookup(s, n);
    if (id >= 0) ref_set(tv, id, v, vl);
    if (v[vl] == '\0') return;
    s = v + vl + 1;
  }
}

static void ref_parse(struct hp_tunable_values *tv, const char *builtin, char *const *envp, int secure) {
  memset(tv, 0, sizeof *tv);
  for (int id = 0; id < HP_T_COUNT; id++) tv->val[id] = hp_tunable_table[id].def;
  ref_apply_string(tv, builtin);
  if (secure || !envp) return;
  uint32_t seen = 0;
  for (char *const *e = envp; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    size_t nl = (size_t)(eq - *e);
    for (int id = 0; id < HP_T_COUNT; id++) {
      const char *a = hp_tunable_table[id].env_alias;
      if (!a || strlen(a) != nl || memcmp(a, *e, nl) != 0) continue;
      if (!(seen & (1u << id)) && ref_set(tv, id, eq + 1, strlen(eq + 1))) seen |= 1u << id;
    }
  }
  for (char *const *e = envp; *e; e++)
    if (strncmp(*e, "GLIBC_TUNABLES=", 15) == 0) ref_apply_string(tv, *e + 15);
}

/* ---------------------------------------------------------------- harness */

static void same(const struct hp_tunable_values *a, const struct hp_tunable_values *b, const char *what) {
  if (a->set_mask != b->set_mask) {
    fprintf(stderr, "%s: set_mask %#x != %#x\n", what, a->set_mask, b->set_mask);
    abort();
  }
  for (int id = 0; id < HP_T_COUNT; id++)
    if (a->val[id] != b->val[id]) {
      fprintf(stderr, "%s: %s = %#llx, expected %#llx\n", what, hp_tunable_table[id].name,
              (unsigned long long)a->val[id], (unsigned long long)b->val[id]);
      abort();
    }
}

static char *dup_exact(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int secure = data[0] & 1, has_builtin = (data[0] >> 1) & 1;
  const uint8_t *p = data + 1, *end = data + size;

  /* The name lookup on raw, unterminated bytes of exactly that length.  */
  {
    size_t n = (size_t)(end - p);
    char *raw = malloc(n ? n : 1);
    if (!raw) abort();
    memcpy(raw, p, n);
    int got = hp_tunable_lookup(raw, n), want = ref_lookup(raw, n);
    if (got != want) {
      fprintf(stderr, "lookup: %d, expected %d\n", got, want);
      abort();
    }
    free(raw);
  }

  char *strs[MAX_ENV + 2], *copies[MAX_ENV + 2];
  size_t ns = 0;
  while (p < end && ns < MAX_ENV + 1) {
    const uint8_t *z = memchr(p, '\0', (size_t)(end - p));
    size_t n = z ? (size_t)(z - p) : (size_t)(end - p);
    strs[ns] = dup_exact(p, n);
    copies[ns] = dup_exact(p, n);
    ns++;
    p += n + (z != NULL);
  }
  const char *builtin = has_builtin && ns > 0 ? strs[0] : NULL;
  size_t first_env = builtin ? 1 : 0;
  char *envp[MAX_ENV + 2];
  size_t ne = 0;
  for (size_t i = first_env; i < ns; i++) envp[ne++] = strs[i];
  envp[ne] = NULL;

  struct hp_tunable_values got, want, plain;
  memset(&got, 0xa5, sizeof got);
  hp_tunables_parse(&got, builtin, envp, secure);
  ref_parse(&want, builtin, envp, secure);
  same(&got, &want, "hp_tunables_parse");

  /* AT_SECURE must be exactly "no environment".  */
  if (secure) {
    hp_tunables_parse(&plain, builtin, NULL, 0);
    same(&got, &plain, "secure vs no environment");
  }

  /* Every string on its own as a GLIBC_TUNABLES value.  */
  for (size_t i = 0; i < ns; i++) {
    ref_parse(&want, NULL, NULL, 0);
    hp_tunables_parse(&got, NULL, NULL, 0);
    hp_tunables_apply_string(&got, strs[i]);
    ref_apply_string(&want, strs[i]);
    same(&got, &want, "hp_tunables_apply_string");
  }

  for (size_t i = 0; i < ns; i++) {
    if (strcmp(strs[i], copies[i]) != 0) {
      fprintf(stderr, "input string %zu was written\n", i);
      abort();
    }
    free(strs[i]);
    free(copies[i]);
  }
  return 0;
}
