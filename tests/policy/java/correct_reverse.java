// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 0;
        int i;
        for (i = 100; i >= 1; i--) {
            sum += i;
        }
        System.out.println(sum);
    }
}
