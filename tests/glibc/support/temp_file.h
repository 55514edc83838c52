/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/temp_file.h>: temporary files that
   the test driver deletes at exit.  Written for hpmalloc; MIT licence.  */
#ifndef HPM_SUPPORT_TEMP_FILE_H
#define HPM_SUPPORT_TEMP_FILE_H

#include <sys/cdefs.h>

__BEGIN_DECLS

/* Schedule NAME for deletion at exit (a copy is kept).  */
void add_temp_file (const char *name);

/* Create a temporary file under test_dir whose name starts with BASE;
   store its malloc'ed name in *FILENAME when FILENAME is not NULL.
   Returns an open descriptor, or -1 with a message printed.  */
int create_temp_file (const char *base, char **filename);

/* The same with a SUFFIX after the random part.  */
int create_temp_file_in_dir (const char *base, const char *dir,
                             char **filename);

/* Create a temporary directory, deleted at exit when empty.  */
char *support_create_temp_directory (const char *base);

/* Delete the scheduled files (registered with atexit by the driver).  */
void support_delete_temp_files (void);

__END_DECLS

#endif
