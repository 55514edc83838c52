/* SPDX-License-Identifier: MIT */
/* hpm ls: the processes of a recording.  `hpm record -o BASE` leaves BASE
   (the first process) and BASE.<pid> (BASE.<pid>.<k> after an exec) for
   every process it started; ls lists them as a tree by parent pid, with
   each one's command, events, threads, peak live bytes and how it ended
   (its end marker: exit, _exit, exec or the signal that killed it; none
   when it was killed by SIGKILL or is still running).  The same
   listing lets analyze and replay take the base name and pick the
   largest process (--largest, trace_pick).  MIT licence.  */
#include "args.h"
#include "hpm.h"

#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ls_opts {
  char **bases;
  int json;
};

static const struct arg_opt ls_args[] = {
  { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct ls_opts, json) },
  { .name = "BASE",
    .kind = ARG_REST,
    .off = offsetof(struct ls_opts, bases),
    .meta = "...",
    .required = 1,
    .doc = "the trace file that hpm record -o wrote" },
  { 0 },
};

static const struct arg_cmd ls_cmd = {
  .name = "ls",
  .synopsis = "usage: hpm ls [--json] BASE...\n",
  .help = "Lists the processes of a recording: BASE (the first process) and every\n"
          "BASE.<pid> and BASE.<pid>.<k> (after an exec) that hpm record wrote, as a\n"
          "tree by parent pid: pid, parent, threads, events, peak live bytes, how it\n"
          "ended, file and command.  Ended: exit, _exit(STATUS), exec, the signal\n"
          "that killed it (SIGPIPE, ...), or `incomplete`: the trace has no end marker\n"
          "(the process was killed by SIGKILL, as the OOM killer does, or is still\n"
          "running) or ends in a partial chunk; its last buffered events are lost.\n"
          "`hpm analyze BASE --largest` and `hpm replay BASE --largest` use the\n"
          "process with the largest peak.\n"
          "  --json   one JSON object per base: {\"base\":..., \"processes\":[{\"file\",\n"
          "           \"pid\", \"ppid\", \"command\", \"events\", \"threads\",\n"
          "           \"peak_live_bytes\", \"depth\", \"readable\", \"ended\", \"status\",\n"
          "           \"signal\", \"complete\"}, ...]}\n",
  .args = ls_args,
};

struct proc {
  char *file, *command;
  uint64_t pid, ppid, events, peak;
  uint32_t threads;
  int depth, ok;
  int complete;    /* 1: an end marker and no partial chunk; -1: unknown (an older recorder) */
  unsigned ended;  /* enum hpm_end of the last end marker, HPM_END_NONE without one */
  unsigned status; /* _exit's status, or the signal that ended it */
  unsigned image;  /* k of FILE.<pid>.<k>: the k-th exec; 0 for the first image */
  size_t parent;   /* index of the parent process, or SIZE_MAX */
};

/* BASE and BASE.<digits>..., sorted: a malloc'd list of malloc'd names.  */
static char **recording_files(const char *base, size_t *n) {
  char pat[PATH_MAX + 8];
  glob_t g;
  size_t k = 0;
  (void)snprintf(pat, sizeof pat, "%s.[0-9]*", base); /* a longer name cannot exist */
  int found = glob(pat, 0, NULL, &g) == 0;
  char **v = calloc((found ? g.gl_pathc : 0) + 2, sizeof *v);
  if (v && access(base, F_OK) == 0) v[k++] = strdup(base);
  for (size_t i = 0; v && found && i < g.gl_pathc; i++) {
    const char *tail = g.gl_pathv[i] + strlen(base) + 1;
    if (strspn(tail, "0123456789.") == strlen(tail)) v[k++] = strdup(g.gl_pathv[i]);
  }
  if (found) globfree(&g);
  *n = k;
  return v;
}

static void free_files(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* P from the trace FILE (no warnings).  Returns 0, or -1 after a message.  */
static int read_proc(const char *file, struct proc *p) {
  struct hpm_trace tr;
  struct prep pr;
  char err[512];
  memset(p, 0, sizeof *p);
  p->file = strdup(file);
  p->parent = SIZE_MAX;
  if (hpm_trace_read_file(file, &tr, err, sizeof err)) {
    fprintf(stderr, "hpm: %s\n", err);
    return -1;
  }
  p->pid = tr.hdr.pid;
  p->ppid = tr.hdr.ppid;
  /* The last end marker (an event chunk without events) says how it ended.  */
  for (size_t i = 0; i < tr.nchunks; i++) {
    const struct hpm_chunk_info *ci = &tr.chunks[i];
    if (ci->kind == HPM_CHUNK_EVENTS && !ci->nevents && !ci->payload_len && HPM_END_REASON(ci->base_id)) {
      p->ended = HPM_END_REASON(ci->base_id);
      p->status = HPM_END_VALUE(ci->base_id);
    }
  }
  p->complete = !(tr.hdr.flags & HPM_HDR_F_ENDS) ? -1 : p->ended != HPM_END_NONE && !tr.truncated;
  p->events = tr.nev;
  p->command = malloc(tr.hdr.cmdline_len + 1);
  if (p->command) {
    for (size_t k = 0; k < tr.hdr.cmdline_len; k++) {
      p->command[k] = tr.hdr.cmdline[k];
      if (!p->command[k]) p->command[k] = ' ';
    }
    p->command[tr.hdr.cmdline_len] = 0;
  }
  if (prep_build(&tr, &pr, NULL, err, sizeof err) == 0) {
    p->peak = pr.peak_live;
    p->threads = pr.nthreads;
    prep_free(&pr);
    p->ok = 1;
  } else
    fprintf(stderr, "hpm: %s: %s\n", file, err);
  hpm_trace_free(&tr);
  return p->ok ? 0 : -1;
}

/* Parents and depths: the image a process exec'd from (same pid, one exec
   before), else the listed process with its ppid (its first image).  */
static void link_tree(struct proc *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      if (i == j) continue;
      if (v[i].image && v[j].pid == v[i].pid && v[j].image + 1 == v[i].image) {
        v[i].parent = j;
        break;
      }
      if (!v[i].image && v[j].pid == v[i].ppid && v[j].pid != v[i].pid && !v[j].image) v[i].parent = j;
    }
  for (size_t i = 0; i < n; i++) {
    v[i].depth = 0;
    for (size_t p = v[i].parent; p != SIZE_MAX && v[i].depth < 64; p = v[p].parent) v[i].depth++;
  }
}

/* The recording BASE, read and linked; NULL after a message when it has
   no files.  */
static struct proc *read_recording(const char *cmd, const char *base, size_t *n) {
  size_t nf;
  char **files = recording_files(base, &nf);
  struct proc *v = files && nf ? calloc(nf, sizeof *v) : NULL;
  if (!v) {
    fprintf(stderr, "hpm %s: %s: no such trace (nor %s.<pid>)\n", cmd, base, base);
    free_files(files, nf);
    return NULL;
  }
  for (size_t i = 0; i < nf; i++) {
    progress("reading %s (%zu of %zu)", files[i], i + 1, nf);
    (void)read_proc(files[i], &v[i]); /* an unreadable one is listed as such */
    const char *dot = strchr(files[i] + strlen(base), '.');
    dot = dot ? strchr(dot + 1, '.') : NULL;
    v[i].image = dot ? (unsigned)strtoul(dot + 1, NULL, 10) : 0;
  }
  progress_done();
  free_files(files, nf);
  link_tree(v, nf);
  *n = nf;
  return v;
}

static void free_recording(struct proc *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    free(v[i].file);
    free(v[i].command);
  }
  free(v);
}

/* Tree order: each process followed by its children (by pid).  */
/* Recursive to the tree's depth; a cycle of pids is never reached from a root.  */
// NOLINTNEXTLINE(misc-no-recursion)
static void tree_order(const struct proc *v, size_t n, size_t parent, size_t *out, size_t *k) {
  for (size_t i = 0; i < n; i++)
    if (v[i].parent == parent) {
      out[(*k)++] = i;
      tree_order(v, n, i, out, k);
    }
}

static const char *const end_name[] = { "", "exit", "_exit", "exec", "signal" };

/* How P ended, for people: exit, _exit(3), exec, SIGPIPE, incomplete, or
   "-" (an older recorder wrote no end markers).  */
static const char *ended_text(const struct proc *p, char *buf, size_t len) {
  if (p->complete < 0 && !p->ended) return "-";
  if (!p->complete) return "incomplete";
  if (p->ended == HPM_END_SIGNAL) {
    const char *abbrev = sigabbrev_np((int)p->status);
    if (abbrev)
      (void)snprintf(buf, len, "SIG%s", abbrev); /* short: fits */
    else
      (void)snprintf(buf, len, "signal %u", p->status); /* as above */
    return buf;
  }
  if (p->ended == HPM_END__EXIT) {
    (void)snprintf(buf, len, "_exit(%u)", p->status); /* as above */
    return buf;
  }
  return p->ended < sizeof end_name / sizeof *end_name ? end_name[p->ended] : "?";
}

static void report_text(const char *base, const struct proc *v, size_t n, const size_t *order) {
  int incomplete = 0;
  printf("recording %s: %zu process%s\n", base, n, n == 1 ? "" : "es");
  printf("%8s %8s %7s %12s %14s %-10s  %-24s %s\n", "pid", "ppid", "threads", "events", "peak live", "ended", "file",
         "command");
  for (size_t k = 0; k < n; k++) {
    const struct proc *p = &v[order[k]];
    char buf[32];
    incomplete |= p->ok && !p->complete;
    printf("%8llu %8llu %7u %12llu %14llu %-10s  %-24s %*s%s%s\n", (unsigned long long)p->pid,
           (unsigned long long)p->ppid, p->threads, (unsigned long long)p->events, (unsigned long long)p->peak,
           p->ok ? ended_text(p, buf, sizeof buf) : "", p->file, 2 * p->depth, "", p->depth ? "`- " : "",
           p->ok ? (p->command ? p->command : "") : "(unreadable)");
  }
  if (incomplete)
    printf("incomplete: no end marker (killed by SIGKILL, as the OOM killer does, or still running) or a partial\n"
           "chunk at the end: the events each thread had buffered last are missing\n");
}

static void report_json(const char *base, const struct proc *v, size_t n, const size_t *order) {
  printf("{\"base\":");
  json_str(stdout, base);
  printf(",\"processes\":[");
  for (size_t k = 0; k < n; k++) {
    const struct proc *p = &v[order[k]];
    printf("%s{\"file\":", k ? "," : "");
    json_str(stdout, p->file);
    printf(",\"pid\":%llu,\"ppid\":%llu,\"command\":", (unsigned long long)p->pid, (unsigned long long)p->ppid);
    json_str(stdout, p->command ? p->command : "");
    printf(",\"events\":%llu,\"threads\":%u,\"peak_live_bytes\":%llu,\"depth\":%d,\"readable\":%s",
           (unsigned long long)p->events, p->threads, (unsigned long long)p->peak, p->depth, p->ok ? "true" : "false");
    printf(",\"ended\":");
    if (p->ended && p->ended < sizeof end_name / sizeof *end_name)
      printf("\"%s\"", end_name[p->ended]);
    else
      printf("null");
    printf(",\"status\":");
    if (p->ended == HPM_END__EXIT)
      printf("%u", p->status);
    else
      printf("null");
    printf(",\"signal\":");
    const char *abbrev = p->ended == HPM_END_SIGNAL ? sigabbrev_np((int)p->status) : NULL;
    if (abbrev)
      printf("\"SIG%s\"", abbrev);
    else if (p->ended == HPM_END_SIGNAL)
      printf("%u", p->status);
    else
      printf("null");
    printf(",\"complete\":%s}", p->complete < 0 ? "null" : p->complete ? "true" : "false");
  }
  printf("]}\n");
}

int cmd_ls(int argc, char **argv) {
  struct ls_opts o = { 0 };
  int rc = args_parse(&ls_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  rc = 0;
  for (char **b = o.bases; *b; b++) {
    size_t n, k = 0;
    struct proc *v = read_recording("ls", *b, &n);
    size_t *order = v ? malloc(n * sizeof *order) : NULL;
    if (!order) {
      free_recording(v, v ? n : 0);
      rc = 1;
      continue;
    }
    tree_order(v, n, SIZE_MAX, order, &k);
    for (size_t i = 0; i < n && k < n; i++) /* a cycle of pids (reuse): list the rest flat */
      if (v[i].parent != SIZE_MAX && v[i].depth >= 64) order[k++] = i;
    if (o.json)
      report_json(*b, v, k, order);
    else
      report_text(*b, v, k, order);
    for (size_t i = 0; i < k; i++) rc |= !v[order[i]].ok;
    free(order);
    free_recording(v, n);
  }
  return rc ? 1 : 0;
}

const char *trace_pick(const char *cmd, const char *file, int largest, char *buf, size_t len) {
  size_t n;
  if (!largest) {
    char **files = recording_files(file, &n);
    if (n > 1 && files && files[0] && !strcmp(files[0], file))
      fprintf(stderr,
              "hpm %s: %s is the first of %zu processes (`hpm ls %s` lists them; --largest picks the one "
              "with the largest peak)\n",
              cmd, file, n, file);
    free_files(files, n);
    return file;
  }
  struct proc *v = read_recording(cmd, file, &n);
  if (!v) return NULL;
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (v[i].ok && (best == SIZE_MAX || v[i].peak > v[best].peak)) best = i;
  const char *picked = NULL;
  if (best != SIZE_MAX && strlen(v[best].file) < len) {
    memcpy(buf, v[best].file, strlen(v[best].file) + 1);
    fprintf(stderr, "hpm %s: using %s: pid %llu, %s, peak %llu live bytes, the largest of %zu process%s\n", cmd, buf,
            (unsigned long long)v[best].pid, v[best].command ? v[best].command : "", (unsigned long long)v[best].peak,
            n, n == 1 ? "" : "es");
    picked = buf;
  } else
    fprintf(stderr, "hpm %s: %s: no readable trace in the recording\n", cmd, file);
  free_recording(v, n);
  return picked;
}
