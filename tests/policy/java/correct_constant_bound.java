// expect: none
public class SumCalculator {
    private static final int LIMIT = 100;

    public static void main(String[] args) {
        int sum = 0;
        for (int i = 1; i < LIMIT + 1; ++i) {
            sum += i;
        }
        System.out.printf("Sum of 1..%d is %d%n", LIMIT, sum);
    }
}
