/* SPDX-License-Identifier: MIT */
/* aarch64: the build's architecture hooks.  MIT licence.  */
#include "hp_placement.h"

const char *hp_arch_name(void) { return "aarch64"; }

void hp_arch_placement(const struct hp_sysinfo *si, struct hp_placement *pl) { hp_placement_aarch64(si, pl); }

size_t hp_arch_default_pmd(const struct hp_sysinfo *si) { return hp_default_pmd_aarch64(si); }
