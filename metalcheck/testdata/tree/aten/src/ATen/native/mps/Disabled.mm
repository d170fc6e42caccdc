// MPS007 fixtures: code switched off by constant conditions.
namespace demo {

bool useFastPath(bool a, bool b);

int pick(bool cond, int n) {
  if (false && useFastPath(cond, true)) {
    return 1;
  }
  if (cond && false) {
    return 2;
  }
  if (0) {
    return 3;
  }
  if (false) {
    return 4;
  }
#if 0
  return 5;
#endif
  // Not findings: an idiomatic do/while(0), a plain false, a comparison with 0.
  do {
    n++;
  } while (0);
  bool off = false;
  if (n == 0 || off) {
    return 6;
  }
  return n;
}

} // namespace demo
