// expect: OffByOne
public class SumCalculator {
    private static int sum;

    public static void main(String[] args) {
        for (int i = 1; i < 100; i++) {
            sum += i;
        }
        System.out.println(sum);
    }
}
