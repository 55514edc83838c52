/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's support/temp_file.c.  Written for hpmalloc;
   MIT licence.  */
#include <support/temp_file.h>
#include <support/support.h>
#include <support/check.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *test_dir = "/tmp";

void
support_set_test_dir (const char *path)
{
  test_dir = path;
}

/* Names to delete at exit, each with the process that created it: a
   forked child runs the parent's atexit handlers too and must not delete
   the parent's files.  */
struct temp_name
{
  struct temp_name *next;
  pid_t owner;
  int is_dir;
  char name[];
};
static struct temp_name *temp_names;

static void
add_temp_name (const char *name, int is_dir)
{
  size_t len = strlen (name);
  struct temp_name *t = malloc (sizeof (*t) + len + 1);
  if (t == NULL)
    {
      printf ("warning: cannot record temporary file %s\n", name);
      return;
    }
  memcpy (t->name, name, len + 1);
  t->owner = getpid ();
  t->is_dir = is_dir;
  t->next = temp_names;
  temp_names = t;
}

void
add_temp_file (const char *name)
{
  add_temp_name (name, 0);
}

int
create_temp_file_in_dir (const char *base, const char *dir, char **filename)
{
  char *name = xasprintf ("%s/%sXXXXXX", dir, base);
  int fd = mkstemp (name);
  if (fd < 0)
    {
      printf ("error: mkstemp (\"%s\"): %m\n", name);
      free (name);
      return -1;
    }
  add_temp_file (name);
  if (filename != NULL)
    *filename = name;
  else
    free (name);
  return fd;
}

int
create_temp_file (const char *base, char **filename)
{
  return create_temp_file_in_dir (base, test_dir, filename);
}

char *
support_create_temp_directory (const char *base)
{
  char *name = xasprintf ("%s/%sXXXXXX", test_dir, base);
  if (mkdtemp (name) == NULL)
    FAIL_EXIT1 ("mkdtemp (\"%s\"): %m", name);
  add_temp_name (name, 1);
  return name;
}

void
support_delete_temp_files (void)
{
  pid_t self = getpid ();
  while (temp_names != NULL)
    {
      struct temp_name *t = temp_names;
      temp_names = t->next;
      if (t->owner == self)
        {
          if (t->is_dir)
            rmdir (t->name);
          else
            unlink (t->name);
        }
      free (t);
    }
}
