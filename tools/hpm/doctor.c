#include "hpm.h"
int cmd_doctor(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return 2;
}
