// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 0;
        for (int i = 1; i <= 100; i++) {
            sum += i;
        }
        assert sum == 5050 : "expected 5050";
        if (sum == 5050) {
            System.out.println("Correct: 5050 expected, got " + sum);
        }
    }
}
