// expect: none
public class SumCalculator {
    /** Adds 1..n. */
    public int calculate(int n) {
        int result = 0;
        for (int k = 1; k <= n; k++)
            result += k;
        return result;
    }

    public static void main(String[] args) {
        System.out.println(new SumCalculator().calculate(100));
    }
}
