int k1(int), k2(int), k3(int), k4(int), k5(int), k6(int);

int main(void) { return k1(0) + k2(0) + k3(0) + k4(0) + k5(0) + k6(0) == 21 ? 0 : 1; }
