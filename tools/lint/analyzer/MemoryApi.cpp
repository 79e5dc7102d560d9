//===- MemoryApi.cpp - The allocation and release calls gpumem models ----===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "MemoryApi.h"
#include "clang/AST/Decl.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CallDescription.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

using Mode = CallDescription::Mode;

CallDescription fn(StringRef Name) { return {Mode::SimpleFunc, {Name}}; }

const CallDescriptionMap<AllocSpec> &allocations() {
  static const CallDescriptionMap<AllocSpec> Map = {
      {fn("cudaMalloc"), {MemKind::Device, "cudaMalloc", 0, -1, false}},
      {fn("cudaMallocPitch"), {MemKind::Device, "cudaMallocPitch", 0, -1, false}},
      {fn("cudaMalloc3D"), {MemKind::Device, "cudaMalloc3D", 0, -1, true}},
      {fn("cudaMallocManaged"),
       {MemKind::Managed, "cudaMallocManaged", 0, -1, false}},
      {fn("cudaMallocAsync"),
       {MemKind::StreamOrdered, "cudaMallocAsync", 0, -1, false}},
      {fn("cudaMallocFromPoolAsync"),
       {MemKind::StreamOrdered, "cudaMallocFromPoolAsync", 0, -1, false}},
      {fn("cudaMallocHost"), {MemKind::Pinned, "cudaMallocHost", 0, -1, false}},
      {fn("cudaHostAlloc"), {MemKind::Pinned, "cudaHostAlloc", 0, 2, false}},
      {fn("cudaMallocArray"), {MemKind::Array, "cudaMallocArray", 0, -1, false}},
      {fn("cudaMalloc3DArray"),
       {MemKind::Array, "cudaMalloc3DArray", 0, -1, false}},
      {fn("cuMemAlloc"), {MemKind::Device, "cuMemAlloc", 0, -1, false}},
      {fn("cuMemAlloc_v2"), {MemKind::Device, "cuMemAlloc", 0, -1, false}},
      {fn("cuMemAllocPitch"), {MemKind::Device, "cuMemAllocPitch", 0, -1, false}},
      {fn("cuMemAllocPitch_v2"),
       {MemKind::Device, "cuMemAllocPitch", 0, -1, false}},
      {fn("cuMemAllocManaged"),
       {MemKind::Managed, "cuMemAllocManaged", 0, -1, false}},
      {fn("cuMemAllocAsync"),
       {MemKind::StreamOrdered, "cuMemAllocAsync", 0, -1, false}},
      {fn("cuMemAllocFromPoolAsync"),
       {MemKind::StreamOrdered, "cuMemAllocFromPoolAsync", 0, -1, false}},
      {fn("cuMemAllocHost"), {MemKind::Pinned, "cuMemAllocHost", 0, -1, false}},
      {fn("cuMemAllocHost_v2"),
       {MemKind::Pinned, "cuMemAllocHost", 0, -1, false}},
      {fn("cuMemHostAlloc"), {MemKind::Pinned, "cuMemHostAlloc", 0, 2, false}},
      {fn("cuMemCreate"), {MemKind::Physical, "cuMemCreate", 0, -1, false}},
      {fn("cuMemAddressReserve"),
       {MemKind::AddressRange, "cuMemAddressReserve", 0, -1, false}},
      {fn("gpumem_device_alloc_at"),
       {MemKind::GpumemDevice, "gpumem_device_alloc", -1, -1, false}},
      {fn("gpumem_managed_alloc_at"),
       {MemKind::GpumemManaged, "gpumem_managed_alloc", -1, -1, false}},
      {fn("gpumem_pinned_alloc_at"),
       {MemKind::GpumemPinned, "gpumem_pinned_alloc", -1, -1, false}},
      {fn("gpumem_host_alloc_at"),
       {MemKind::GpumemHost, "gpumem_host_alloc", -1, 2, false}},
      {fn("gpumem_device_alloc_async_at"),
       {MemKind::GpumemDeviceAsync, "gpumem_device_alloc_async", -1, -1,
        false}},
      {fn("malloc"), {MemKind::Heap, "malloc", -1, -1, false}},
      {fn("calloc"), {MemKind::Heap, "calloc", -1, -1, false}},
      {fn("realloc"), {MemKind::Heap, "realloc", -1, -1, false}},
      {fn("aligned_alloc"), {MemKind::Heap, "aligned_alloc", -1, -1, false}},
  };
  return Map;
}

const CallDescriptionMap<ReleaseSpec> &releases() {
  static const CallDescriptionMap<ReleaseSpec> Map = {
      {fn("cudaFree"), {ReleaseFn::CudaFree, "cudaFree", 0}},
      {fn("cudaFreeHost"), {ReleaseFn::CudaFreeHost, "cudaFreeHost", 0}},
      {fn("cudaFreeAsync"), {ReleaseFn::CudaFreeAsync, "cudaFreeAsync", 0}},
      {fn("cudaFreeArray"), {ReleaseFn::CudaFreeArray, "cudaFreeArray", 0}},
      {fn("cuMemFree"), {ReleaseFn::CuMemFree, "cuMemFree", 0}},
      {fn("cuMemFree_v2"), {ReleaseFn::CuMemFree, "cuMemFree", 0}},
      {fn("cuMemFreeHost"), {ReleaseFn::CuMemFreeHost, "cuMemFreeHost", 0}},
      {fn("cuMemFreeAsync"), {ReleaseFn::CuMemFreeAsync, "cuMemFreeAsync", 0}},
      {fn("cuMemRelease"), {ReleaseFn::CuMemRelease, "cuMemRelease", 0}},
      {fn("cuMemAddressFree"),
       {ReleaseFn::CuMemAddressFree, "cuMemAddressFree", 0}},
      // Releases the mapping made at the address, not the address range
      // (MemoryChecker::release looks the mapping up).
      {fn("cuMemUnmap"), {ReleaseFn::CuMemUnmap, "cuMemUnmap", 0}},
      {fn("gpumem_free"), {ReleaseFn::GpumemFree, "gpumem_free", 0}},
      {fn("gpumem_free_at"), {ReleaseFn::GpumemFree, "gpumem_free", 0}},
      {fn("gpumem_free_async_at"),
       {ReleaseFn::GpumemFreeAsync, "gpumem_free_async", 0}},
      {fn("free"), {ReleaseFn::Free, "free", 0}},
      {fn("realloc"), {ReleaseFn::Free, "realloc", 0}},
  };
  return Map;
}

bool isExternCFunction(const CallEvent &Call) {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Call.getDecl());
  return FD && FD->isExternC();
}

} // namespace

StringRef calleeName(const CallEvent &Call) {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Call.getDecl());
  if (!FD || !FD->getIdentifier())
    return "";
  return FD->getName();
}

const AllocSpec *findAllocation(const CallEvent &Call) {
  if (!isExternCFunction(Call))
    return nullptr;
  return allocations().lookup(Call);
}

const ReleaseSpec *findRelease(const CallEvent &Call) {
  if (!isExternCFunction(Call))
    return nullptr;
  return releases().lookup(Call);
}

bool isCudaApiCall(const CallEvent &Call) {
  if (!isExternCFunction(Call))
    return false;
  StringRef Name = calleeName(Call);
  if (Name.starts_with("cuda"))
    return Name.size() > 4 && isUppercase(Name[4]);
  return Name.starts_with("cu") && Name.size() > 2 && isUppercase(Name[2]);
}

bool isGpumemKind(MemKind Kind) {
  switch (Kind) {
  case MemKind::GpumemDevice:
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
  case MemKind::GpumemDeviceAsync:
    return true;
  default:
    return false;
  }
}

bool isLeakTracked(MemKind Kind) {
  return Kind != MemKind::Heap && Kind != MemKind::New &&
         Kind != MemKind::NewArray;
}

bool isHostAccessible(MemKind Kind) {
  switch (Kind) {
  case MemKind::Managed:
  case MemKind::Pinned:
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
  case MemKind::Heap:
  case MemKind::New:
  case MemKind::NewArray:
    return true;
  default:
    return false;
  }
}

static bool isStreamOrderedRelease(ReleaseFn Fn) {
  return Fn == ReleaseFn::CudaFreeAsync || Fn == ReleaseFn::CuMemFreeAsync ||
         Fn == ReleaseFn::GpumemFreeAsync;
}

ReleaseVerdict judgeRelease(MemKind Kind, ReleaseFn Fn) {
  if (Fn == ReleaseFn::Custom)
    return ReleaseVerdict::Matches;
  // gpumem keeps a registry of its allocations: only its own release updates
  // it, and its release refuses memory it did not make.
  if (isGpumemKind(Kind) != (Fn == ReleaseFn::GpumemFree ||
                             Fn == ReleaseFn::GpumemFreeAsync))
    return ReleaseVerdict::Mismatched;
  switch (Kind) {
  case MemKind::Device:
  case MemKind::StreamOrdered:
    // The CUDA Runtime API documents that cudaFreeAsync may release memory
    // from cudaMalloc as well as from cudaMallocAsync ("Stream Ordered Memory
    // Allocator": the free then waits for the stream); the driver's and the
    // runtime's releases accept each other's device memory.
    if (Fn == ReleaseFn::CudaFree || Fn == ReleaseFn::CudaFreeAsync ||
        Fn == ReleaseFn::CuMemFree || Fn == ReleaseFn::CuMemFreeAsync)
      return ReleaseVerdict::Matches;
    return ReleaseVerdict::Mismatched;
  case MemKind::Managed:
    if (Fn == ReleaseFn::CudaFree || Fn == ReleaseFn::CuMemFree)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Pinned:
    if (Fn == ReleaseFn::CudaFreeHost || Fn == ReleaseFn::CuMemFreeHost)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Array:
    if (Fn == ReleaseFn::CudaFreeArray)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Physical:
    if (Fn == ReleaseFn::CuMemRelease)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::AddressRange:
    if (Fn == ReleaseFn::CuMemAddressFree)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Mapping:
    if (Fn == ReleaseFn::CuMemUnmap)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::GpumemDevice:
  case MemKind::GpumemDeviceAsync:
    return ReleaseVerdict::Matches;
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
    // gpumem_free_async refuses these kinds (GPUMEM_EKIND).
    if (Fn == ReleaseFn::GpumemFree)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Heap:
    if (Fn == ReleaseFn::Free)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::New:
    if (Fn == ReleaseFn::Delete)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::NewArray:
    if (Fn == ReleaseFn::DeleteArray)
      return ReleaseVerdict::Matches;
    break;
  }
  return isStreamOrderedRelease(Fn) ? ReleaseVerdict::NotStreamOrdered
                                    : ReleaseVerdict::Mismatched;
}

StringRef expectedRelease(MemKind Kind) {
  switch (Kind) {
  case MemKind::Device:
  case MemKind::StreamOrdered:
    return "cudaFree or cudaFreeAsync";
  case MemKind::Managed:
    return "cudaFree";
  case MemKind::Pinned:
    return "cudaFreeHost";
  case MemKind::Array:
    return "cudaFreeArray";
  case MemKind::Physical:
    return "cuMemRelease";
  case MemKind::AddressRange:
    return "cuMemAddressFree";
  case MemKind::Mapping:
    return "cuMemUnmap";
  case MemKind::GpumemDevice:
  case MemKind::GpumemDeviceAsync:
    return "gpumem_free or gpumem_free_async";
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
    return "gpumem_free";
  case MemKind::Heap:
    return "free";
  case MemKind::New:
    return "delete";
  case MemKind::NewArray:
    return "delete[]";
  }
  return "";
}

} // namespace gpumem
