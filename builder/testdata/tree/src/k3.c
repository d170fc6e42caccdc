#ifdef MPSPATCH_BREAK
#error deliberately broken for the builder tests
#endif

int k3(int x) { return x + 3; }
