#include "hpm.h"
int cmd_compare(int c, char **v){(void)c;(void)v;return 1;}
int cmd_tune(int c, char **v){(void)c;(void)v;return 1;}
