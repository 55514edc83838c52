/* Symbols for the return addresses of recorded call stacks, offline: the
   address is placed in the mapping the trace's maps chunk gives for it
   (/proc/self/maps of the traced process), turned into the ELF file's
   virtual address through its program headers, and handed to addr2line
   from binutils (`-f -C`: function, demangled, and file:line where the
   file has debug information, also from a separate debug file found by
   build-id or debuglink).  One addr2line process per object file, with
   every address of that file at once (on a memfd: no pipe to deadlock
   on).  addr2line rather than libdw: nothing more for hpm to link, and it
   is installed wherever binutils is.  Return addresses are looked up one
   byte before (the call instruction), so a call at the end of a function
   is not named after the next one.  MIT licence.  */
#include "hpm.h"
#include "stacks.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct mapping {
  uint64_t start, end, offset;
  const char *path; /* into the copy of the maps text */
};

/* One line of /proc/PID/maps: "start-end perms offset dev inode path".
   Returns the path (after the blanks), or NULL when LINE is not a
   mapping of a file.  */
static const char *parse_maps_line(const char *line, struct mapping *m) {
  char *e;
  errno = 0;
  m->start = strtoull(line, &e, 16);
  if (*e != '-') return NULL;
  m->end = strtoull(e + 1, &e, 16);
  if (*e != ' ') return NULL;
  e += strcspn(e + 1, " ") + 1; /* the permissions */
  m->offset = strtoull(e, &e, 16);
  if (*e != ' ' || errno) return NULL;
  for (int field = 0; field < 2; field++) { /* device and inode */
    e += strspn(e, " ");
    e += strcspn(e, " ");
  }
  e += strspn(e, " ");
  return *e == '/' ? e : NULL;
}

/* The file-backed mappings of MAPS (the maps chunks' text, in file
   order), copied into *TEXT (owned by the caller).  Returns the count.  */
static size_t parse_maps(const char *maps, struct mapping **out, char **text) {
  size_t n = 0, cap = 0;
  *out = NULL;
  *text = strdup(maps ? maps : "");
  if (!*text) return 0;
  for (char *line = *text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    struct mapping mp;
    const char *path = parse_maps_line(line, &mp);
    if (!path) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      struct mapping *m = realloc(*out, cap * sizeof *m);
      if (!m) break;
      *out = m;
    }
    mp.path = path;
    (*out)[n++] = mp;
  }
  return n;
}

/* The mapping holding A, the last one listed when several do (the
   latest snapshot), or NULL.  */
static const struct mapping *find_mapping(const struct mapping *m, size_t n, uint64_t a) {
  for (size_t i = n; i-- > 0;)
    if (a >= m[i].start && a < m[i].end) return &m[i];
  return NULL;
}

/* OFF (an offset in the ELF file PATH) as the file's virtual address,
   from its PT_LOAD headers; OFF itself when the file cannot be read.  */
static uint64_t file_vaddr(const char *path, uint64_t off) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  Elf64_Ehdr eh;
  uint64_t v = off;
  if (fd < 0) return off;
  if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
      eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256) {
    Elf64_Phdr ph[256];
    size_t len = (size_t)eh.e_phnum * sizeof *ph;
    if (pread(fd, ph, len, (off_t)eh.e_phoff) == (ssize_t)len)
      for (int i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && off >= ph[i].p_offset && off < ph[i].p_offset + ph[i].p_filesz) {
          v = off - ph[i].p_offset + ph[i].p_vaddr;
          break;
        }
  }
  (void)close(fd); /* opened for reading */
  return v;
}

/* Run addr2line on PATH for the N virtual addresses VA; its output into
   a malloc'd string (NULL on failure).  */
static char *run_addr2line(const char *path, const uint64_t *va, size_t n) {
  int in = memfd_create("hpm-addr2line", MFD_CLOEXEC), pfd[2] = { -1, -1 };
  FILE *f = in >= 0 ? fdopen(dup(in), "w") : NULL;
  char *out = NULL;
  if (!f) goto done;
  for (size_t i = 0; i < n; i++) fprintf(f, "%llx\n", (unsigned long long)va[i]);
  if (fclose(f) != 0 || lseek(in, 0, SEEK_SET) != 0 || pipe2(pfd, O_CLOEXEC) != 0) goto done;
  pid_t pid = fork();
  if (pid == 0) {
    if (dup2(in, 0) < 0 || dup2(pfd[1], 1) < 0) _exit(127);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) (void)dup2(null, 2); /* its complaints about a file are ours to report */
    execlp("addr2line", "addr2line", "-f", "-C", "-e", path, (char *)NULL);
    _exit(127);
  }
  (void)close(pfd[1]);
  pfd[1] = -1;
  if (pid > 0) {
    size_t len = 0, cap = 4096;
    out = malloc(cap);
    for (ssize_t r; out;) {
      if (len + 1 == cap) {
        char *bigger = realloc(out, cap *= 2);
        if (!bigger) break;
        out = bigger;
      }
      r = read(pfd[0], out + len, cap - len - 1);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      len += (size_t)r;
    }
    if (out) out[len] = 0;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    if (out && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      free(out);
      out = NULL;
    }
  }
done:
  if (in >= 0) (void)close(in);
  if (pfd[0] >= 0) (void)close(pfd[0]);
  if (pfd[1] >= 0) (void)close(pfd[1]);
  return out;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* SY from addr2line's two lines for one address (FUNC, FILE_LINE), or
   from the object and offset where it knows nothing.  */
static void fill_sym(struct sym *sy, const char *func, const char *file_line, const char *obj, uint64_t off) {
  if (func && strcmp(func, "??") != 0)
    sy->func = strdup(func);
  else {
    char buf[512];
    (void)snprintf(buf, sizeof buf, "%s+0x%llx", base_name(obj), (unsigned long long)off); /* a label */
    sy->func = strdup(buf);
  }
  sy->obj = base_name(obj);
  if (file_line && strncmp(file_line, "??", 2) != 0) {
    const char *colon = strrchr(file_line, ':');
    char *end;
    unsigned long line = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (colon && line > 0) {
      sy->file = strndup(file_line, (size_t)(colon - file_line));
      sy->line = (unsigned)line;
    }
  }
}

/* Symbols for the addresses of one object file, IDX[0..N) into ADDR/OUT,
   all in mapping M.  Returns 0, or -1 when addr2line could not be run.  */
static int symbolize_file(const struct mapping *const *m, const uint64_t *addr, const size_t *idx, size_t n,
                          struct sym *out) {
  const char *path = m[idx[0]]->path;
  uint64_t *va = malloc((n ? n : 1) * sizeof *va);
  if (!va) return -1;
  for (size_t k = 0; k < n; k++) {
    const struct mapping *mk = m[idx[k]];
    va[k] = file_vaddr(path, addr[idx[k]] - 1 - mk->start + mk->offset);
  }
  char *text = run_addr2line(path, va, n), *line = text;
  for (size_t k = 0; k < n; k++) {
    char *func = NULL, *fl = NULL;
    if (line && *line) {
      func = line;
      line = strchr(line, '\n');
      if (line) *line++ = 0;
    }
    if (line && *line) {
      fl = line;
      line = strchr(line, '\n');
      if (line) *line++ = 0;
    }
    fill_sym(&out[idx[k]], func, fl, path, va[k]);
  }
  int rc = text ? 0 : -1;
  free(text);
  free(va);
  return rc;
}

static int cmp_by_path(const void *a, const void *b, void *ctx) {
  const struct mapping *const *m = ctx;
  int c = strcmp(m[*(const size_t *)a]->path, m[*(const size_t *)b]->path);
  return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

int symbolize(const char *maps, const uint64_t *addr, size_t n, struct sym *out, size_t *nfiles) {
  struct mapping *maps_v;
  char *text;
  size_t nm = parse_maps(maps, &maps_v, &text), nidx = 0, files = 0;
  const struct mapping **m = calloc(n ? n : 1, sizeof(const struct mapping *));
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  int rc = m && idx ? 0 : -1;
  memset(out, 0, n * sizeof *out);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    m[i] = addr[i] ? find_mapping(maps_v, nm, addr[i] - 1) : NULL;
    if (m[i])
      idx[nidx++] = i;
    else {
      char buf[64];
      (void)snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)addr[i]); /* fits */
      out[i].func = strdup(buf);
      out[i].obj = "?";
    }
  }
  if (rc == 0) qsort_r(idx, nidx, sizeof *idx, cmp_by_path, m);
  for (size_t a = 0, b; rc == 0 && a < nidx; a = b) {
    for (b = a + 1; b < nidx && !strcmp(m[idx[b]]->path, m[idx[a]]->path); b++)
      ;
    if (symbolize_file(m, addr, idx + a, b - a, out) == 0) files++;
  }
  /* Object names point into the maps text: keep one copy per name.  */
  for (size_t i = 0; i < n; i++) out[i].obj = strdup(out[i].obj ? out[i].obj : "?");
  if (nfiles) *nfiles = files;
  free(m);
  free(idx);
  free(maps_v);
  free(text);
  return rc;
}

void sym_free(struct sym *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(s[i].func);
    free(s[i].file);
    free((char *)s[i].obj);
  }
}
