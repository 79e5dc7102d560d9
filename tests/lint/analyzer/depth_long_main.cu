// A 300-line main is followed to its end: the leak and the double free on
// its last lines are found (the engine's budgets hold for a function this long).
#include "check.h"
#include <stdio.h>
__global__ void stage(float *out, const float *in, int n);
float host_work(float *h, int n);

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  size_t bytes = n * sizeof(float);
  float *h = (float *)malloc(bytes);
  if (!h)
    return 1;
  float *d0;
  CHECK(cudaMalloc(&d0, bytes));
  float *d1;
  CHECK(cudaMalloc(&d1, bytes));
  float *d2;
  CHECK(cudaMalloc(&d2, bytes));
  float *d3;
  CHECK(cudaMalloc(&d3, bytes));
  float *d4;
  CHECK(cudaMalloc(&d4, bytes));
  float *d5;
  CHECK(cudaMalloc(&d5, bytes));
  float *d6;
  CHECK(cudaMalloc(&d6, bytes));
  float *d7;
  CHECK(cudaMalloc(&d7, bytes));
  float *d8;
  CHECK(cudaMalloc(&d8, bytes));
  float *d9;
  CHECK(cudaMalloc(&d9, bytes));
  float *d10;
  CHECK(cudaMalloc(&d10, bytes));
  float *d11;
  CHECK(cudaMalloc(&d11, bytes));
  // stage 0
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 1);
  CHECK(cudaMemcpy(d0, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d1, d0, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d1, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 0 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d0, d0, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 2)
    printf("stage 0: %f\n", h[0]);

  // stage 1
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 2);
  CHECK(cudaMemcpy(d1, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d2, d1, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d2, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 1 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d1, d1, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 3)
    printf("stage 1: %f\n", h[0]);

  // stage 2
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 3);
  CHECK(cudaMemcpy(d2, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d3, d2, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d3, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 2 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d2, d2, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 4)
    printf("stage 2: %f\n", h[0]);

  // stage 3
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 4);
  CHECK(cudaMemcpy(d3, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d4, d3, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d4, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 3 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d3, d3, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 5)
    printf("stage 3: %f\n", h[0]);

  // stage 4
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 5);
  CHECK(cudaMemcpy(d4, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d5, d4, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d5, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 4 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d4, d4, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 6)
    printf("stage 4: %f\n", h[0]);

  // stage 5
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 6);
  CHECK(cudaMemcpy(d5, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d6, d5, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d6, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 5 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d5, d5, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 7)
    printf("stage 5: %f\n", h[0]);

  // stage 6
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 7);
  CHECK(cudaMemcpy(d6, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d7, d6, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d7, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 6 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d6, d6, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 8)
    printf("stage 6: %f\n", h[0]);

  // stage 7
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 8);
  CHECK(cudaMemcpy(d7, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d8, d7, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d8, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 7 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d7, d7, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 9)
    printf("stage 7: %f\n", h[0]);

  // stage 8
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 9);
  CHECK(cudaMemcpy(d8, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d9, d8, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d9, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 8 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d8, d8, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 10)
    printf("stage 8: %f\n", h[0]);

  // stage 9
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 10);
  CHECK(cudaMemcpy(d9, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d10, d9, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d10, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 9 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d9, d9, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 11)
    printf("stage 9: %f\n", h[0]);

  // stage 10
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 11);
  CHECK(cudaMemcpy(d10, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d11, d10, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d11, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 10 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d10, d10, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 12)
    printf("stage 10: %f\n", h[0]);

  // stage 11
  for (int i = 0; i < n; i++)
    h[i] = (float)(i * 12);
  CHECK(cudaMemcpy(d11, h, bytes, cudaMemcpyHostToDevice));
  stage<<<(n + 255) / 256, 256>>>(d0, d11, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d0, bytes, cudaMemcpyDeviceToHost));
  if (host_work(h, n) < 0.0f) {
    fprintf(stderr, "stage 11 failed\n");
    free(h);
    exit(1);
  }
  for (int r = 0; r < 10; r++) {
    stage<<<1, 256>>>(d11, d11, n);
    CHECK(cudaGetLastError());
  }
  if (argc > 13)
    printf("stage 11: %f\n", h[0]);

  float *extra;
  CHECK(cudaMalloc(&extra, bytes)); // expected-warning{{memory allocated with cudaMalloc is never released}}
  CHECK(cudaMemset(extra, 0, bytes));
  CHECK(cudaFree(d0));
  CHECK(cudaFree(d1));
  CHECK(cudaFree(d2));
  CHECK(cudaFree(d3));
  CHECK(cudaFree(d4));
  CHECK(cudaFree(d5));
  CHECK(cudaFree(d6));
  CHECK(cudaFree(d7));
  CHECK(cudaFree(d8));
  CHECK(cudaFree(d9));
  CHECK(cudaFree(d10));
  CHECK(cudaFree(d11));
  CHECK(cudaFree(d0)); // expected-warning{{is released again with cudaFree}}
  free(h);
  return 0;
}
