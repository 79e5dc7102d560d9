#ifndef REPORT_SCENARIO_H
#define REPORT_SCENARIO_H
/* Allocates 3 x 1 MiB device (line 8), 4 KiB pinned (line 9), 2 x 2 MiB managed (10, 11). */
void scenario_leak(void *keep[6]);
/* One 1 MiB device allocation (line 16). */
void *scenario_leaky_step(void);
#endif
