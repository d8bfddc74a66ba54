// driver.cpp: runs the fake ops of fake_ops.cpp and prints results that must
// not change when gpuprof is attached.
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fake_ops.h"

static void* run_sleeper(void*) {
  at::_ops::sleeper::call(7);
  return nullptr;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  long sum = 0, caught = 0;
  for (int i = 0; i < n; i++) {
    int r = at::_ops::catcher::call(i);
    if (r == -1) caught++;
    else sum += r;
  }
  std::printf("catcher sum %ld caught %ld\n", sum, caught);
  std::printf("backtrace frames %d\n", at::_ops::backtracer::call(10));

  pthread_t thread;
  pthread_create(&thread, nullptr, run_sleeper, nullptr);
  usleep(50 * 1000);
  pthread_cancel(thread);
  void* result = nullptr;
  pthread_join(thread, &result);
  std::printf("sleeper %s\n", result == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled");
  return 0;
}
