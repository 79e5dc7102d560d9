void fÿþ() { float *Ã(p; cudaMallocHost(&Ã(p, 4); cudaFree(Ã(p); }
