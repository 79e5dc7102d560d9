void *gm_alloc(int n);
void gm_leak(void);
