/* SPDX-License-Identifier: MIT */
/* Symbols for the return addresses of recorded call stacks, offline: the
   address is placed in the mapping the trace's maps chunks give for it
   (/proc/self/maps of the traced process), turned into the ELF file's
   virtual address through its program headers, and named with libdw's
   dwfl (elfutils): the ELF symbol tables (.symtab, .dynsym, the
   .gnu_debugdata "minidebuginfo"), the DWARF of the file or of its
   separate debug file (by build-id under /usr/lib/debug/.build-id, or
   debuglink) for file:line and inlined calls.

   A name is accepted only when the address lies inside the symbol's
   extent [st_value, st_value + st_size): dynamic symbols of a stripped
   object are a sparse subset of its functions, and the nearest one below
   an address is often not the function holding it.  Otherwise the frame
   is `module+0xoffset`.  With DWARF, each DW_TAG_inlined_subroutine
   holding the address is a frame of its own (the innermost first), each
   named at the line its callee was inlined from.  Return addresses are
   looked up one byte before (inside the call instruction), so a call at
   the end of a function is not named after the next one.  MIT licence.  */
#include "hpm.h"
#include "stacks.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* C++ names demangled by libstdc++'s __cxa_demangle where it is installed
   (looked up once; hpm links no C++ runtime).  A malloc'd copy.  */
static char *demangled(const char *name) {
  static char *(*demangle)(const char *, char *, size_t *, int *);
  static int looked;
  if (!looked) {
    looked = 1;
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    demangle = h ? (char *(*)(const char *, char *, size_t *, int *))dlsym(h, "__cxa_demangle") : NULL;
  }
  int st = -1;
  char *d = demangle && name[0] == '_' && name[1] == 'Z' ? demangle(name, NULL, NULL, &st) : NULL;
  if (d && st == 0) return d;
  free(d);
  return strndup(name, strcspn(name, "@")); /* without a symbol version: "memcpy@@GLIBC_2.14" */
}

/* The name of function DIE (subprogram or inlined subroutine): its
   linkage name when it has one (C++), else its name, through
   DW_AT_abstract_origin and DW_AT_specification.  */
static const char *die_name(Dwarf_Die *die) {
  Dwarf_Attribute a;
  const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
  if (!n) n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
  if (!n) n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
  return n;
}

/* A new frame after LAST (its caller), at LAST's address, at FILE:LINE,
   its function still to be named.  NULL when out of memory.  */
static struct sym *push_caller(struct sym *last, const char *file, unsigned line) {
  struct sym *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->addr = last->addr;
  s->offset = last->offset;
  s->obj = last->obj;
  s->path = last->path;
  s->checked = last->checked;
  s->file = file ? strdup(file) : NULL;
  s->line = s->file ? line : 0;
  last->caller = s;
  return s;
}

/* Not leaks: the names and frames below are stored in the caller's
   struct sym (S, reached through symbolize's OUT array, which the
   analyzer does not follow) and freed by sym_free.  */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
/* The inlined calls holding VA (in MOD) as frames from S outward: S,
   which the symbol table named, takes the innermost inlined function's
   name (its file:line stay the line table's); each frame outward is the
   function that call was inlined into, at the call's file:line; the last
   is the function the symbol table named.  */
static void inline_chain(Dwfl_Module *mod, Dwarf_Addr va, struct sym *s) {
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, va, &bias), *inner = NULL, *scopes = NULL;
  /* dwarf_getscopes goes from an inlined call to its abstract origin's
     scopes; the concrete ones, the calls it was inlined into, are the
     innermost scope's parents.  */
  int n = cu ? dwarf_getscopes(cu, va - bias, &inner) : 0;
  n = n > 0 ? dwarf_getscopes_die(&inner[0], &scopes) : 0;
  free(inner);
  Dwarf_Files *files = NULL;
  if (n > 0 && dwarf_getsrcfiles(cu, &files, NULL) != 0) files = NULL; /* the calls then have no file */
  char *symname = s->func;
  struct sym *cur = s;
  for (int i = 0; i < n && dwarf_tag(&scopes[i]) != DW_TAG_subprogram; i++) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue; /* a lexical block */
    const char *name = die_name(&scopes[i]);
    Dwarf_Attribute a;
    Dwarf_Word cf = 0, cl = 0;
    const char *file = NULL;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl) != 0) cl = 0;
    if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &cf) == 0)
      file = dwarf_filesrc(files, cf, NULL, NULL);
    char *d = demangled(name ? name : "??");
    struct sym *outer = d ? push_caller(cur, file, (unsigned)cl) : NULL;
    if (!outer) {
      free(d);
      break;
    }
    cur->func = d;
    cur->inlined = 1;
    cur = outer;
  }
  cur->func = symname;
  free(scopes);
}

/* Name the frame *S at VA (ELF virtual address of PATH's file, already in
   S->offset) with module MOD; OBJ the module's name.  */
static void name_frame(Dwfl_Module *mod, uint64_t va, struct sym *s) {
  GElf_Sym esym;
  GElf_Off off = 0;
  Dwarf_Addr bias = 0;
  if (mod && dwfl_module_getelf(mod, &bias) == NULL) mod = NULL;
  Dwarf_Addr a = va + bias;
  const char *name = mod ? dwfl_module_addrinfo(mod, a, &off, &esym, NULL, NULL, NULL) : NULL;
  if (name && esym.st_size > 0 && off < esym.st_size) {
    s->func = demangled(name);
    s->checked = 1;
  } else {
    char buf[512];
    (void)snprintf(buf, sizeof buf, "%s+0x%llx", s->obj, (unsigned long long)va); /* a label */
    s->func = strdup(buf);
  }
  if (!mod || !s->func) return;
  Dwfl_Line *ln = dwfl_module_getsrc(mod, a);
  int lineno = 0;
  const char *file = ln ? dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL) : NULL;
  if (file && lineno > 0) {
    s->file = strdup(file);
    s->line = (unsigned)lineno;
  }
  /* Inlined calls are named only inside a checked function: DWARF and the
     symbol table then agree on where the code is.  */
  if (s->checked) inline_chain(mod, a, s);
}
#pragma GCC diagnostic pop

static const Dwfl_Callbacks dwfl_callbacks = {
  .find_elf = dwfl_build_id_find_elf,
  .find_debuginfo = dwfl_standard_find_debuginfo, /* build-id and debuglink, /usr/lib/debug */
  .section_address = dwfl_offline_section_address,
};

/* Symbols for the addresses of one object file, IDX[0..N) into ADDR/OUT,
   all in mapping M.  Returns 0, or -1 when libdw could not read it.  */
static int symbolize_file(const struct mapping *const *m, const uint64_t *addr, const size_t *idx, size_t n,
                          struct sym *out) {
  const char *path = m[idx[0]]->path;
  Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);
  Dwfl_Module *mod = dwfl ? dwfl_report_elf(dwfl, base_name(path), path, -1, 0, false) : NULL;
  if (dwfl) (void)dwfl_report_end(dwfl, NULL, NULL);
  for (size_t k = 0; k < n; k++) {
    const struct mapping *mk = m[idx[k]];
    struct sym *s = &out[idx[k]];
    s->obj = base_name(path);
    s->path = path;
    s->offset = file_vaddr(path, addr[idx[k]] - 1 - mk->start + mk->offset);
    name_frame(mod, s->offset, s);
  }
  if (dwfl) dwfl_end(dwfl);
  return mod ? 0 : -1;
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
  for (size_t i = 0; i < n; i++) out[i].addr = addr[i];
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
  /* Object names point into the maps text: keep one copy per frame.  */
  for (size_t i = 0; i < n; i++) {
    const char *obj = out[i].obj ? out[i].obj : "?", *path = out[i].path ? out[i].path : "";
    for (struct sym *s = &out[i]; s; s = s->caller) {
      s->obj = strdup(obj);
      s->path = strdup(path);
    }
    if (!out[i].func) out[i].func = strdup("?");
  }
  if (nfiles) *nfiles = files;
  free(m);
  free(idx);
  free(maps_v);
  free(text);
  return rc;
}

void sym_free(struct sym *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (struct sym *c = s[i].caller, *next; c; c = next) {
      next = c->caller;
      free(c->func);
      free(c->file);
      free((char *)c->obj);
      free((char *)c->path);
      free(c);
    }
    free(s[i].func);
    free(s[i].file);
    free((char *)s[i].obj);
    free((char *)s[i].path);
  }
}
