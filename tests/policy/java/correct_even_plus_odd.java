// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int even = 0;
        int odd = 0;
        for (int i = 2; i <= 100; i += 2) {
            even += i;
        }
        for (int i = 1; i < 100; i += 2) {
            odd += i;
        }
        System.out.println(even + odd);
    }
}
